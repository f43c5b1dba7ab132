//! docs/src/reference/glossary.md: the words netto shows that a newcomer
//! cannot guess, and each kind of loss, in the one line stat prints, top's
//! help lists and the web page gives as a tooltip.

use std::fmt::Write as _;

use crate::frontends::glossary::WORDS;
use crate::model::Losses;

pub fn page() -> String {
    let mut page = format!(
        "# Glossary\n\n{}\n\n\
         The words on netto's screens that a newcomer cannot guess, in the line each screen \
         gives them: `netto stat` prints it below a word's first use, `netto top` lists them \
         all on its help's second page (`?` twice), and the web page shows it when the pointer \
         rests on the word.\n\n| Word | Meaning |\n|---|---|\n",
        super::GENERATED
    );
    for word in WORDS {
        let _ = writeln!(page, "| `{}` | {} |", word.word, word.meaning);
    }
    page.push_str(
        "\n## Losses\n\nWhat a header's `lost` counts, by kind (the `losses` object of a \
         snapshot, the `kind` label of `netto_losses_total`).\n\n\
         | Kind | Shown as | Meaning |\n|---|---|---|\n",
    );
    for kind in Losses::KINDS {
        let _ = writeln!(
            page,
            "| `{}` | lost N {} | {} |",
            kind.name, kind.short, kind.meaning
        );
    }
    page
}
