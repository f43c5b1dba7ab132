//! What the sketch is asked to be: sampling probability and geometry,
//! validated before anything touches the kernel.

use crate::abi::sketch as abi;

pub const SKETCH_MAX_ROWS: u32 = abi::SKETCH_MAX_ROWS;
pub const SKETCH_MIN_COLUMNS: u32 = abi::SKETCH_MIN_COLUMNS;
pub const SKETCH_MAX_COLUMNS: u32 = abi::SKETCH_MAX_COLUMNS;
pub const WEIGHT_ONE: u32 = abi::SKETCH_WEIGHT_ONE;

/// Below this, a gap of 1/p slots would no longer fit the variates' 32 bits
/// with room to spare, and the weight 1/p would lose its resolution.
pub const MIN_PROBABILITY: f64 = 1e-6;

pub const DEFAULT_PROBABILITY: f64 = 0.01;
pub const DEFAULT_ROWS: u32 = 5;
pub const DEFAULT_COLUMNS: u32 = 2048;
pub const DEFAULT_TOP: usize = 10;

/// A sketch that cannot be: the command line says so before anything
/// touches the kernel.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("probability {0} is outside (0, 1] (smallest accepted: {MIN_PROBABILITY})")]
    Probability(f64),
    #[error("rows must be between 1 and {SKETCH_MAX_ROWS}, got {0}")]
    Rows(u32),
    #[error("columns must be a power of two between {SKETCH_MIN_COLUMNS} and {SKETCH_MAX_COLUMNS}, got {0}")]
    Columns(u32),
    #[error("{rows} rows of {columns} columns need {bits} bits of the 64-bit flow hash: use fewer rows or columns")]
    HashBits { rows: u32, columns: u32, bits: u32 },
}

/// Rows and columns of the Count Sketch: fixed per loaded program, since
/// the verifier bounds every cell index with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    rows: u32,
    columns: u32,
}

impl Geometry {
    pub fn new(rows: u32, columns: u32) -> Result<Geometry, ConfigError> {
        check_rows(rows)?;
        check_columns(columns)?;
        let geometry = Geometry { rows, columns };
        let bits = rows * geometry.lane_bits();
        if bits > abi::SKETCH_HASH_BITS {
            return Err(ConfigError::HashBits {
                rows,
                columns,
                bits,
            });
        }
        Ok(geometry)
    }

    pub fn rows(self) -> u32 {
        self.rows
    }

    pub fn columns(self) -> u32 {
        self.columns
    }

    pub fn column_bits(self) -> u32 {
        self.columns.trailing_zeros()
    }

    /// Hash bits per row: the column index and one sign bit.
    pub fn lane_bits(self) -> u32 {
        self.column_bits() + 1
    }

    pub fn cells(self) -> usize {
        self.rows as usize * self.columns as usize
    }
}

pub fn check_rows(rows: u32) -> Result<u32, ConfigError> {
    if (1..=SKETCH_MAX_ROWS).contains(&rows) {
        Ok(rows)
    } else {
        Err(ConfigError::Rows(rows))
    }
}

pub fn check_columns(columns: u32) -> Result<u32, ConfigError> {
    if columns.is_power_of_two() && (SKETCH_MIN_COLUMNS..=SKETCH_MAX_COLUMNS).contains(&columns) {
        Ok(columns)
    } else {
        Err(ConfigError::Columns(columns))
    }
}

/// The sampling probability as the program applies it: an update adds the
/// integer weight WEIGHT_ONE / p, so p is rounded to the nearest value
/// whose weight is a whole number (a relative change below 0.1%).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    weight: u32,
}

impl Sampling {
    pub fn new(probability: f64) -> Result<Sampling, ConfigError> {
        if !(MIN_PROBABILITY..=1.0).contains(&probability) {
            return Err(ConfigError::Probability(probability));
        }
        let weight = (f64::from(WEIGHT_ONE) / probability).round() as u32;
        Ok(Sampling { weight })
    }

    pub fn weight(self) -> u32 {
        self.weight
    }

    /// The probability the weight stands for, which is what is sampled.
    pub fn probability(self) -> f64 {
        f64::from(WEIGHT_ONE) / f64::from(self.weight)
    }
}

/// Everything `netto sketch` and a co-hosting session choose.
#[derive(Debug, Clone, PartialEq)]
pub struct SketchConfig {
    pub probability: f64,
    pub rows: u32,
    pub columns: u32,
    /// Flows reported per snapshot.
    pub top: usize,
    /// Seed of the variates; random when absent. Tests fix it to replay
    /// the same sampling in the reference implementation.
    pub seed: Option<u64>,
}

impl Default for SketchConfig {
    fn default() -> Self {
        SketchConfig {
            probability: DEFAULT_PROBABILITY,
            rows: DEFAULT_ROWS,
            columns: DEFAULT_COLUMNS,
            top: DEFAULT_TOP,
            seed: None,
        }
    }
}

impl SketchConfig {
    pub fn geometry(&self) -> Result<Geometry, ConfigError> {
        Geometry::new(self.rows, self.columns)
    }

    pub fn sampling(&self) -> Result<Sampling, ConfigError> {
        Sampling::new(self.probability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_limits() {
        assert!(Geometry::new(4, 2048).is_ok());
        assert!(Geometry::new(4, 32768).is_ok(), "4 x 16 bits = 64");
        assert!(matches!(
            Geometry::new(5, 32768),
            Err(ConfigError::HashBits { bits: 80, .. })
        ));
        assert!(Geometry::new(8, 128).is_ok());
        assert!(matches!(Geometry::new(0, 64), Err(ConfigError::Rows(0))));
        assert!(matches!(Geometry::new(9, 16), Err(ConfigError::Rows(9))));
        for bad in [0, 8, 1000, 65536] {
            assert!(matches!(
                Geometry::new(2, bad),
                Err(ConfigError::Columns(_))
            ));
        }
        let g = Geometry::new(3, 1024).unwrap();
        assert_eq!((g.column_bits(), g.lane_bits(), g.cells()), (10, 11, 3072));
    }

    #[test]
    fn sampling_rounds_to_whole_weights() {
        assert_eq!(Sampling::new(1.0).unwrap().weight(), WEIGHT_ONE);
        assert_eq!(Sampling::new(0.01).unwrap().probability(), 0.01);
        let p = Sampling::new(0.3).unwrap().probability();
        assert!((p - 0.3).abs() / 0.3 < 1e-3, "{p}");
        for bad in [0.0, -0.5, 1.0001, f64::NAN, 1e-9] {
            assert!(Sampling::new(bad).is_err(), "{bad}");
        }
    }
}
