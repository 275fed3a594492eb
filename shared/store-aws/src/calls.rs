//! Counting AWS calls: an SDK interceptor that records when each request is sent and
//! answered (every attempt counts, retries included). From that log, [`CallLog::calls`] gives what an operation cost and
//! [`CallLog::sequential_depth`] how many round trips it waited for one after another —
//! deterministic numbers for the per-operation budgets, unlike timings.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::{Intercept, SharedInterceptor};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mark {
    Start(String),
    End(String),
}

/// The shared log; clone it into clients with [`CallLog::interceptor`].
#[derive(Debug, Clone, Default)]
pub struct CallLog {
    marks: Arc<Mutex<Vec<Mark>>>,
}

/// The operation a request performs: JSON protocols name it in `x-amz-target`
/// (`DynamoDB_20120810.GetItem`); S3 is REST, told by method and query.
fn operation(req: &HttpRequest) -> String {
    if let Some(target) = req.headers().get("x-amz-target") {
        let service = if target.starts_with("DynamoDB") {
            "DynamoDB"
        } else {
            "EventBridge"
        };
        return format!("{service}.{}", target.rsplit('.').next().unwrap_or(target));
    }
    let uri = req.uri();
    let op = match (
        req.method(),
        uri.contains("?versions") || uri.contains("&versions"),
    ) {
        ("GET", true) => "ListObjectVersions",
        ("GET", false) => "GetObject",
        ("PUT", _) => "PutObject",
        ("DELETE", _) => "DeleteObject",
        ("HEAD", _) => "HeadObject",
        _ => "Other",
    };
    format!("S3.{op}")
}

/// The current attempt's operation, carried from before to after transmit.
#[derive(Debug, Clone)]
struct InFlight(String);

impl Storable for InFlight {
    type Storer = StoreReplace<Self>;
}

impl CallLog {
    pub fn interceptor(&self) -> SharedInterceptor {
        SharedInterceptor::new(self.clone())
    }

    fn push(&self, mark: Mark) {
        if let Ok(mut m) = self.marks.lock() {
            m.push(mark);
        }
    }

    /// Forgets everything recorded so far.
    pub fn reset(&self) {
        if let Ok(mut m) = self.marks.lock() {
            m.clear();
        }
    }

    /// Operations started since the last reset, sorted (`DynamoDB.GetItem`, `S3.GetObject`).
    pub fn calls(&self) -> Vec<String> {
        let marks = self.marks.lock().map(|m| m.clone()).unwrap_or_default();
        let mut ops: Vec<String> = marks
            .into_iter()
            .filter_map(|m| match m {
                Mark::Start(op) => Some(op),
                Mark::End(_) => None,
            })
            .collect();
        ops.sort();
        ops
    }

    /// The longest chain of calls each of which started after the previous one ended.
    pub fn sequential_depth(&self) -> usize {
        let marks = self.marks.lock().map(|m| m.clone()).unwrap_or_default();
        let mut open: Vec<(String, usize)> = Vec::new();
        let (mut finished_depth, mut deepest) = (0, 0);
        for m in marks {
            match m {
                Mark::Start(op) => {
                    let depth = finished_depth + 1;
                    deepest = deepest.max(depth);
                    open.push((op, depth));
                }
                Mark::End(op) => {
                    if let Some(i) = open.iter().position(|(o, _)| *o == op) {
                        let (_, depth) = open.remove(i);
                        finished_depth = finished_depth.max(depth);
                    }
                }
            }
        }
        deepest
    }
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        "CallLog"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = operation(context.request());
        cfg.interceptor_state().store_put(InFlight(op.clone()));
        self.push(Mark::Start(op));
        Ok(())
    }

    fn read_after_transmit(
        &self,
        _context: &BeforeDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(InFlight(op)) = cfg.load::<InFlight>().cloned() {
            self.push(Mark::End(op));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(marks: &[(&str, bool)]) -> CallLog {
        let l = CallLog::default();
        for (op, start) in marks {
            l.push(if *start {
                Mark::Start((*op).into())
            } else {
                Mark::End((*op).into())
            });
        }
        l
    }

    #[test]
    fn overlapping_calls_share_a_round_trip() {
        let l = log(&[
            ("A", true),
            ("B", true),
            ("A", false),
            ("B", false),
            ("C", true),
            ("C", false),
        ]);
        assert_eq!(l.sequential_depth(), 2);
        assert_eq!(l.calls(), ["A", "B", "C"]);
    }

    #[test]
    fn back_to_back_calls_each_add_one() {
        let l = log(&[
            ("A", true),
            ("A", false),
            ("B", true),
            ("B", false),
            ("C", true),
            ("C", false),
        ]);
        assert_eq!(l.sequential_depth(), 3);
        l.reset();
        assert_eq!((l.calls().len(), l.sequential_depth()), (0, 0));
    }
}
