//! The words netto shows that a newcomer cannot guess, each explained in
//! one line: stat prints the line the first time the word appears, top
//! lists them in its help, and the web page gives them as tooltips, in
//! the same words (web/app.js `WORDS`; a test holds the two together).
//! The kinds of loss are explained in their own table,
//! [`crate::model::Losses::KINDS`].

use std::collections::BTreeSet;

/// A word and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub word: &'static str,
    pub meaning: &'static str,
}

pub const PERCENT_OF_ONE_CPU: Word = Word {
    word: "% of one CPU",
    meaning: "100 is one CPU busy for the whole interval; a host with N CPUs goes up to N x 100",
};

pub const ESTIMATE: Word = Word {
    word: "~",
    meaning: "estimated from stack samples (the tier does not measure it), shown to its error's \
              precision; a count it cannot know reads -",
};

pub const AGREEMENT: Word = Word {
    word: "agreement",
    meaning: "the time the stack samples stand for (samples x sampling period) over the exact \
              time: 1.00 means the samples saw all of it; shares are of the samples either way",
};

pub const CALIBRATION: Word = Word {
    word: "calibrated",
    meaning: "this tier's estimate over the exact time in the run's calibration intervals; when \
              applied, the estimate shown is the samples' divided by it, and its error holds the \
              calibration's",
};

pub const TIMER_SOFTIRQ_OVERHEAD: Word = Word {
    word: "timer_softirq_overhead",
    meaning: "the timer softirq's own work around network callbacks (its expiry loop, \
              re-arming the timer), shared out by the callbacks' time; on a virtual machine \
              re-arming the timer is costly, so it can outweigh the callbacks",
};

pub const SOFTIRQ_LOOP: Word = Word {
    word: "samples left out (softirq loop)",
    meaning: "samples of a socket call taken in the softirq loop outside any softirq netto saw \
              begin: interrupt time that falls due where interrupts come back on, not the \
              call's; left out of the breakdown",
};

pub const SKID: Word = Word {
    word: "skid",
    meaning: "a function that turns interrupts back on: cpu-clock samples that fell due while \
              they were off land here, so its time is mostly its callers' work",
};

pub const GAPS_REUSED: Word = Word {
    word: "gaps reused",
    meaning: "sampling gaps the XDP sketch used a second time because a CPU's supply of random \
              gaps ran dry before netto topped it up; 0 means every sampling decision was fresh",
};

pub const NET_CPU: Word = Word {
    word: "net CPU",
    meaning: "the network time of a heavy hitter's connection in the interval (under --by flow): \
              its receiving socket's and, where on this host, its sender's or forwarded flow's; \
              - where the connection was folded into other",
};

pub const SHARE_OF_EVENT: Word = Word {
    word: "share of event",
    meaning: "the program's run time over the time of the network event its hook runs in (an \
              estimate: entering a program is not in BPF statistics, and a program can run \
              outside that event, as tc egress inside a send call)",
};

/// Every word, in the order top's help lists them.
pub const WORDS: [Word; 10] = [
    PERCENT_OF_ONE_CPU,
    ESTIMATE,
    CALIBRATION,
    AGREEMENT,
    TIMER_SOFTIRQ_OVERHEAD,
    SOFTIRQ_LOOP,
    SKID,
    GAPS_REUSED,
    NET_CPU,
    SHARE_OF_EVENT,
];

impl Word {
    /// `word: meaning`, the one-line form.
    pub fn line(&self) -> String {
        format!("{}: {}", self.word, self.meaning)
    }
}

/// Which words a stream of text (stat's tables, one per interval) has
/// explained: each once, on the line below its first use, so the legend
/// is where the word is without repeating every interval.
#[derive(Debug, Clone, Default)]
pub struct Legend {
    explained: BTreeSet<&'static str>,
}

impl Legend {
    /// Appends `  word: meaning` to `text`, the first time only.
    pub fn explain(&mut self, text: &mut String, word: &'static str, meaning: &'static str) {
        if self.explained.insert(word) {
            text.push_str(&format!("  {word}: {meaning}\n"));
        }
    }

    /// [`Legend::explain`] for one of [`WORDS`].
    pub fn explain_word(&mut self, text: &mut String, word: Word) {
        self.explain(text, word.word, word.meaning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Losses;

    /// The web page explains the same words in the same words.
    #[test]
    fn the_web_page_uses_the_same_words() {
        let app = include_str!("../../web/app.js");
        for word in WORDS {
            assert!(
                app.contains(&format!("{:?}", word.meaning)),
                "web/app.js lacks the meaning of {:?}",
                word.word
            );
        }
        for kind in Losses::KINDS {
            assert!(
                app.contains(&format!("{:?}", kind.meaning)),
                "web/app.js lacks the meaning of {}",
                kind.name
            );
        }
        for by in crate::model::GroupBy::ALL {
            assert!(
                app.contains(&format!("{}: {:?}", by.name(), by.id_name())),
                "web/app.js lacks the id of a group by {}",
                by.name()
            );
        }
    }

    #[test]
    fn a_legend_explains_each_word_once() {
        let mut legend = Legend::default();
        let mut text = String::new();
        legend.explain_word(&mut text, AGREEMENT);
        legend.explain_word(&mut text, SKID);
        legend.explain_word(&mut text, AGREEMENT);
        assert_eq!(text, format!("  {}\n  {}\n", AGREEMENT.line(), SKID.line()));
    }

    #[test]
    fn each_meaning_is_one_line() {
        for word in WORDS {
            assert!(!word.meaning.contains('\n'), "{}", word.word);
            assert!(!word.meaning.contains("  "), "{}", word.word);
        }
    }
}
