//! Summary statistics of repeated runs, with outliers flagged by the median absolute deviation
//! (modified z-score above 3.5, as Iglewicz and Hoaglin suggest).

use serde::{Deserialize, Serialize};

/// Statistics of repeated measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Measurements.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Indices of samples whose modified z-score exceeds 3.5.
    pub outliers: Vec<usize>,
}

fn median_of(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Summarises samples (any unit). Empty input gives zeros.
pub fn summarize(samples: &[f64]) -> Summary {
    let n = samples.len();
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = median_of(&sorted);
    let mean = if n == 0 {
        0.0
    } else {
        samples.iter().sum::<f64>() / n as f64
    };
    let var = if n < 2 {
        0.0
    } else {
        samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    };
    let mut dev: Vec<f64> = samples.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(|a, b| a.total_cmp(b));
    let mad = median_of(&dev);
    let outliers = if mad > 0.0 {
        samples
            .iter()
            .enumerate()
            .filter(|(_, x)| 0.6745 * (*x - median).abs() / mad > 3.5)
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    };
    Summary {
        n,
        median,
        mean,
        min: sorted.first().copied().unwrap_or(0.0),
        max: sorted.last().copied().unwrap_or(0.0),
        stddev: var.sqrt(),
        outliers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.median, 2.5);
        assert_eq!(s.mean, 2.5);
        assert_eq!((s.min, s.max), (1.0, 4.0));
        assert!((s.stddev - 1.2909944).abs() < 1e-6);
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn flags_the_far_sample() {
        let s = summarize(&[10.0, 10.5, 9.5, 10.2, 9.8, 50.0]);
        assert_eq!(s.outliers, vec![5]);
        assert_eq!(summarize(&[]).n, 0);
        assert_eq!(summarize(&[3.0]).median, 3.0);
    }
}
