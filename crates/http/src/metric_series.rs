//! Metric handles kept per label set, for the hot paths (every request, every engine call):
//! [`SeriesByName`] finds the counter and histogram of a label set with one hash look-up by its
//! unbounded-looking label (a route template, an engine code) and a scan of the few series under
//! it, instead of building the labels, the `metrics` key and its registry look-up on every
//! record (a quarter of what metrics cost a no-op engine request: BENCHMARKS.md).
//!
//! Handles are bound to the recorder installed when they are made, so a cache is only made once
//! the process-wide recorder is (the modules using it keep theirs in a `OnceLock` the binary
//! fills after installing it); until then those modules record nothing and build nothing.

use std::collections::HashMap;
use std::sync::RwLock;

/// The series of one metric family, grouped by one label's value (`name`): each group holds the
/// few series that differ in the other labels (method and status, or outcome).
pub struct SeriesByName<S> {
    groups: RwLock<HashMap<Box<str>, Vec<S>>>,
}

impl<S> Default for SeriesByName<S> {
    fn default() -> Self {
        Self {
            groups: RwLock::new(HashMap::new()),
        }
    }
}

impl<S> SeriesByName<S> {
    /// Runs `record` on the series of `name` that `is_it` accepts, made by `make` (and kept)
    /// the first time it is asked for.
    pub fn record(
        &self,
        name: &str,
        is_it: impl Fn(&S) -> bool,
        make: impl FnOnce() -> S,
        record: impl FnOnce(&S),
    ) {
        {
            let groups = self
                .groups
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(series) = groups
                .get(name)
                .and_then(|group| group.iter().find(|s| is_it(s)))
            {
                record(series);
                return;
            }
        }
        let mut groups = self
            .groups
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let group = groups.entry(name.into()).or_default();
        // Another thread may have made it between the two locks.
        let position = match group.iter().position(&is_it) {
            Some(position) => position,
            None => {
                group.push(make());
                group.len() - 1
            }
        };
        record(&group[position]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_label_set_is_made_once_and_found_again() {
        let cache = SeriesByName::<(u16, std::cell::Cell<u32>)>::default();
        let mut made = 0;
        for status in [200, 404, 200, 200, 404] {
            cache.record(
                "/core/api/v1/items",
                |series| series.0 == status,
                || {
                    made += 1;
                    (status, std::cell::Cell::new(0))
                },
                |series| series.1.set(series.1.get() + 1),
            );
        }
        cache.record("/other", |_| true, || (200, 0.into()), |_| {});
        assert_eq!(made, 2);
        let groups = cache.groups.read().unwrap();
        let counts: Vec<(u16, u32)> = groups["/core/api/v1/items"]
            .iter()
            .map(|series| (series.0, series.1.get()))
            .collect();
        assert_eq!(counts, [(200, 3), (404, 2)]);
        assert_eq!(groups.len(), 2);
    }
}
