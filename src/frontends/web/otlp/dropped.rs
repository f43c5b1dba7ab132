//! Why a window of profiles was not delivered: the `reason` label of
//! `netto_otlp_windows_dropped_total`. A file of its own, which imports
//! nothing of the exporter's, so that the metrics can name every reason
//! while the exporter counts through the state that holds the metrics.

/// Why a window was not delivered: the `reason` of
/// `netto_otlp_windows_dropped_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// The queue was full: the receiver is slower than the windows come.
    QueueFull,
    /// No connection could be made.
    Unreachable,
    /// A try took longer than [`super::SEND_TIMEOUT`].
    Timeout,
    /// The receiver answered with an error, or rejected profiles.
    Rejected,
    /// The exporter took more CPU over the last window than
    /// `--otlp-budget` allows: the window is not drawn, which is most of
    /// what a window costs.
    OverBudget,
}

impl Dropped {
    pub const ALL: [Dropped; 5] = [
        Dropped::QueueFull,
        Dropped::Unreachable,
        Dropped::Timeout,
        Dropped::Rejected,
        Dropped::OverBudget,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dropped::QueueFull => "queue_full",
            Dropped::Unreachable => "unreachable",
            Dropped::Timeout => "timeout",
            Dropped::Rejected => "rejected",
            Dropped::OverBudget => "over_budget",
        }
    }
}
