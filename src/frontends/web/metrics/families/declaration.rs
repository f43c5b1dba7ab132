//! What a family's declaration says: how its value behaves, what it is
//! about, its labels and its help.

/// How a family's value behaves, as the exposition's `# TYPE` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Cumulative since netto started: read it through `rate()` or
    /// `increase()`.
    Counter,
    /// The value now (or of the last interval).
    Gauge,
}

impl Kind {
    /// The word of the `# TYPE` line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// What a family is about: the sections of the reference page, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concern {
    Events,
    WhoPays,
    Breakdown,
    NetworkPrograms,
    OwnCost,
    TiersAndBudget,
    Losses,
    Run,
}

impl Concern {
    pub const ALL: [Concern; 8] = [
        Concern::Events,
        Concern::WhoPays,
        Concern::Breakdown,
        Concern::NetworkPrograms,
        Concern::OwnCost,
        Concern::TiersAndBudget,
        Concern::Losses,
        Concern::Run,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Concern::Events => "Events",
            Concern::WhoPays => "Who pays",
            Concern::Breakdown => "Breakdown",
            Concern::NetworkPrograms => "eBPF programs on the network path",
            Concern::OwnCost => "Own cost",
            Concern::TiersAndBudget => "Tiers, estimates and budget",
            Concern::Losses => "Losses",
            Concern::Run => "The run and its serving",
        }
    }

    /// What the families of this concern answer, in one line.
    pub fn meaning(self) -> &'static str {
        match self {
            Concern::Events => {
                "What the kernel's network entry points cost: CPU time and runs per event, softirq \
                 vector and timer callback."
            }
            Concern::WhoPays => {
                "Whom the network time was for (`--by`): one of the three time families, the one \
                 of the `--by` in force, from the first attributed interval on."
            }
            Concern::Breakdown => {
                "Where in the stack the time went: kernel stack samples by context and category, \
                 and the exact time divided by them."
            }
            Concern::NetworkPrograms => {
                "What the host's own BPF programs on network hooks (XDP, tc, cgroup and socket \
                 programs, netto's sketch among them) cost, from BPF run-time statistics."
            }
            Concern::OwnCost => {
                "What netto itself costs: its processes' CPU time and its BPF programs' run time."
            }
            Concern::TiersAndBudget => {
                "The tier in force, what it estimates from stack samples instead of measuring, how \
                 well samples agree with exact time, and the budget netto keeps its cost under."
            }
            Concern::Losses => "What netto could not measure, counted where it happened.",
            Concern::Run => {
                "Where the numbers come from, how much time they cover, and the web clients of \
                 the snapshot stream."
            }
        }
    }
}

/// A label of one or more families.
#[derive(Debug, Clone, Copy)]
pub struct Label {
    pub name: &'static str,
    /// What a value names.
    pub meaning: &'static str,
    /// Every value it takes, where they are a closed set; `None` for
    /// values only the host knows (CPU numbers, program names, groups).
    pub values: Option<fn() -> Vec<&'static str>>,
}

/// One family as `/metrics` serves it.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub concern: Concern,
    pub labels: &'static [Label],
    pub help: &'static str,
}

impl Family {
    pub fn label_names(&self) -> Vec<&'static str> {
        self.labels.iter().map(|label| label.name).collect()
    }
}
