//! Each thread's cores over time (seed 004 figures 3.1–3.8) from one `toggling_sim` model's JSON:
//! `threads[].cores`, a `[t_s, core]` pair at each change of core, checked against the program's
//! `fast_cpus` and `slow_cpus`. What does not fit is a [`CoresError`], shown as a note.

use serde_json::Value;

use crate::view::{CoreTrace, PlotKind};

/// Why a model's core-over-time plot has no data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum CoresError {
    #[error("the results carry no `fast_cpus` and `slow_cpus` lists of CPU numbers")]
    NoCpus,
    #[error("the model has no `threads`")]
    NoThreads,
    #[error("no thread carries `cores` (results written before the core trace was kept)")]
    NoTrace,
    #[error("thread {thread} has no `cores` list")]
    ThreadWithout { thread: usize },
    #[error("thread {thread}'s change {index} is not a [time s, core] pair")]
    Malformed { thread: usize, index: usize },
    #[error(
        "thread {thread}'s change {index} is at {t_s} s, before the start or the change before"
    )]
    OutOfOrder {
        thread: usize,
        index: usize,
        t_s: f64,
    },
    #[error("thread {thread} is on core {core} at {t_s} s, not one of the CPUs {cpus:?}")]
    UnknownCore {
        thread: usize,
        core: u64,
        t_s: f64,
        cpus: Vec<usize>,
    },
}

/// The program's fast (big) and slow (LITTLE) CPU numbers.
///
/// # Errors
/// [`CoresError::NoCpus`] when either list is missing, not all CPU numbers, or both are empty.
pub(super) fn cpus(exp: &Value) -> Result<(Vec<usize>, Vec<usize>), CoresError> {
    let list = |key: &str| -> Option<Vec<usize>> {
        exp.get(key)?
            .as_array()?
            .iter()
            .map(|c| c.as_u64().and_then(|c| usize::try_from(c).ok()))
            .collect()
    };
    match (list("fast_cpus"), list("slow_cpus")) {
        (Some(fast), Some(slow)) if !(fast.is_empty() && slow.is_empty()) => Ok((fast, slow)),
        _ => Err(CoresError::NoCpus),
    }
}

/// The plot of `model`'s threads on `fast` and `slow` CPUs, over the model's `completion_s`.
///
/// # Errors
/// A [`CoresError`] for a model without threads or core traces, a change that is not a pair of
/// a time and a CPU number, times that go backwards, or a core outside `fast` and `slow`.
pub(super) fn kind(model: &Value, fast: &[usize], slow: &[usize]) -> Result<PlotKind, CoresError> {
    let threads = model
        .get("threads")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty())
        .ok_or(CoresError::NoThreads)?;
    if threads.iter().all(|t| t.get("cores").is_none()) {
        return Err(CoresError::NoTrace);
    }
    let cpus: Vec<usize> = fast.iter().chain(slow).copied().collect();
    let mut traces = Vec::with_capacity(threads.len());
    for (thread, t) in threads.iter().enumerate() {
        let changes = t
            .get("cores")
            .and_then(Value::as_array)
            .ok_or(CoresError::ThreadWithout { thread })?;
        let mut steps = Vec::with_capacity(changes.len());
        let mut last_s = 0.0;
        for (index, c) in changes.iter().enumerate() {
            let malformed = CoresError::Malformed { thread, index };
            let pair = c
                .as_array()
                .filter(|p| p.len() == 2)
                .ok_or(malformed.clone())?;
            let t_s = pair[0]
                .as_f64()
                .filter(|v| v.is_finite())
                .ok_or(malformed.clone())?;
            let core = pair[1].as_u64().ok_or(malformed)?;
            if t_s < last_s {
                return Err(CoresError::OutOfOrder { thread, index, t_s });
            }
            last_s = t_s;
            let known = usize::try_from(core).ok().filter(|c| cpus.contains(c));
            let Some(core) = known else {
                return Err(CoresError::UnknownCore {
                    thread,
                    core,
                    t_s,
                    cpus,
                });
            };
            steps.push((t_s, core));
        }
        traces.push(CoreTrace {
            name: format!("thread {thread}"),
            steps,
            end_s: t.get("end_s").and_then(Value::as_f64),
        });
    }
    Ok(PlotKind::Cores {
        fast_cpus: fast.to_vec(),
        slow_cpus: slow.to_vec(),
        // The drawing falls back to the traces' last time when this is missing.
        end_s: model
            .get("completion_s")
            .and_then(Value::as_f64)
            .unwrap_or(f64::NAN),
        threads: traces,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const FAST: [usize; 2] = [2, 3];
    const SLOW: [usize; 2] = [0, 1];

    fn model(threads: Value) -> Value {
        json!({"model": "baseline", "completion_s": 2.0, "threads": threads})
    }

    #[test]
    fn traces_become_steps_per_thread() {
        let m = model(json!([
            {"end_s": 1.5, "cores": [[0.0005, 2], [0.5, 0]]},
            {"end_s": null, "cores": [[0.0005, 1]]},
        ]));
        match kind(&m, &FAST, &SLOW).unwrap() {
            PlotKind::Cores {
                fast_cpus,
                slow_cpus,
                end_s,
                threads,
            } => {
                assert_eq!(
                    (fast_cpus, slow_cpus, end_s),
                    (FAST.to_vec(), SLOW.to_vec(), 2.0)
                );
                assert_eq!(threads[0].steps, vec![(0.0005, 2), (0.5, 0)]);
                assert_eq!(threads[0].end_s, Some(1.5));
                assert_eq!(threads[1].name, "thread 1");
                assert_eq!(threads[1].end_s, None);
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn what_does_not_fit_is_a_typed_error() {
        let cases = [
            (model(json!([{"end_s": 1.0}])), CoresError::NoTrace),
            (json!({"model": "m"}), CoresError::NoThreads),
            (
                model(json!([{"cores": [[0.0, 0]]}, {"end_s": 1.0}])),
                CoresError::ThreadWithout { thread: 1 },
            ),
            (
                model(json!([{"cores": [[0.0, 0], [0.1]]}])),
                CoresError::Malformed {
                    thread: 0,
                    index: 1,
                },
            ),
            (
                model(json!([{"cores": [[0.0, -1]]}])),
                CoresError::Malformed {
                    thread: 0,
                    index: 0,
                },
            ),
            (
                model(json!([{"cores": [["soon", 1]]}])),
                CoresError::Malformed {
                    thread: 0,
                    index: 0,
                },
            ),
            (
                model(json!([{"cores": [[0.5, 0], [0.2, 1]]}])),
                CoresError::OutOfOrder {
                    thread: 0,
                    index: 1,
                    t_s: 0.2,
                },
            ),
            (
                model(json!([{"cores": [[0.0, 0]]}, {"cores": [[0.0, 0], [0.3, 9]]}])),
                CoresError::UnknownCore {
                    thread: 1,
                    core: 9,
                    t_s: 0.3,
                    cpus: vec![2, 3, 0, 1],
                },
            ),
            (
                model(json!([{"cores": [[0.0, u64::MAX]]}])),
                CoresError::UnknownCore {
                    thread: 0,
                    core: u64::MAX,
                    t_s: 0.0,
                    cpus: vec![2, 3, 0, 1],
                },
            ),
        ];
        for (m, want) in cases {
            assert_eq!(kind(&m, &FAST, &SLOW), Err(want), "{m}");
        }
    }

    #[test]
    fn cpu_lists_are_read_not_assumed() {
        let exp = json!({"fast_cpus": [4, 5], "slow_cpus": [0]});
        assert_eq!(cpus(&exp), Ok((vec![4, 5], vec![0])));
        for bad in [
            json!({"fast_cpus": [4]}),
            json!({"fast_cpus": [4], "slow_cpus": [-1]}),
            json!({"fast_cpus": [], "slow_cpus": []}),
        ] {
            assert_eq!(cpus(&bad), Err(CoresError::NoCpus), "{bad}");
        }
    }
}
