//! The stream runner: the layer between an engine's decode loop and a wire protocol.
//! See [`StreamRunner`].

use serde::Serialize;
use serde_json::Value;

use crate::{DeltaMessage, ResponseParser, Result, StreamItem};

/// How a runner treats the request: the two request fields that change what reaches
/// the client, read from the request by the server (or by
/// `ResponseParser.from_request` in Python).
///
/// The default is a request with tools, `tool_choice` other than `none` and parallel
/// calls allowed.
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Rewrite a final `stop` to `tool_calls` once a call was emitted. False when the
    /// request's `tool_choice` is `none`.
    pub rewrite_finish_reason: bool,
    /// False keeps only the first tool call (`parallel_tool_calls=false`).
    pub parallel_tool_calls: bool,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        RunnerOptions {
            rewrite_finish_reason: true,
            parallel_tool_calls: true,
        }
    }
}

/// One delta of a step, with the step's transport metadata when it is the step's last.
///
/// Invariant: of the deltas one [`StreamRunner::step`] returns, only the last carries
/// `token_ids`, `logprobs` and `finish_reason`; the others have None there. A client
/// that sums per-delta metadata therefore counts each token once.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunnerDelta {
    /// The parser's delta (with `parallel_tool_calls=false`, its calls other than the
    /// first removed). The runner's own metadata-only delta has empty content.
    pub delta: DeltaMessage,
    /// The delta carried a tool call.
    pub emitted_tool_call: bool,
    /// The step's token ids, on the step's last delta.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
    /// The step's log probabilities, on the step's last delta. Opaque to the runner: whatever the engine reports, passed through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
    /// Set on the last delta of the final step (already rewritten).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// On the last delta of the final step: the index of the call the output ended
    /// inside, when it was sent (incremental streaming; see
    /// [`ResponseParser::cut_call`]). The encoders end its arguments with the
    /// [`CUT_KEY`](crate::wire::CUT_KEY) member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_call: Option<usize>,
}

/// Token counts of one response, as the wire formats report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Tokens of the prompt: the caller's count (the runner never sees the prompt).
    pub prompt_tokens: usize,
    /// Tokens of the response: the caller's count, or the token ids fed.
    pub completion_tokens: usize,
    /// Tokens inside the reasoning span (included in `completion_tokens`); None when
    /// the parser cannot count them (no token ids, or the reasoning tags' ids unknown).
    pub reasoning_tokens: Option<usize>,
}

impl Usage {
    /// `prompt_tokens + completion_tokens` (reasoning tokens are part of the latter).
    pub fn total_tokens(&self) -> usize {
        self.prompt_tokens + self.completion_tokens
    }
}

/// The stream runner of one response: the layer between an engine's decode loop and a
/// wire protocol.
///
/// An engine yields, per step, some text and optionally its token ids, log
/// probabilities and a finish reason. The response parser turns the text into zero or
/// more deltas. The runner adds what the parser deliberately does not know about:
/// - transport metadata (token ids, logprobs, finish reason) rides only on the *last*
///   delta of the step, so a client that sums per-delta metadata counts each token once;
/// - a step with a finish reason or token metadata that produced no delta still yields
///   one empty-content delta, so the metadata is never lost;
/// - the finish reason `stop` becomes `tool_calls` when a call was emitted (the client
///   must run the tools), never when `tool_choice` is `none`;
/// - `parallel_tool_calls=false` keeps only the first call (index 0);
/// - usage: prompt and completion tokens from the caller (completion tokens default to
///   the token ids fed), reasoning tokens from the parser.
///
/// The runner does not own the parser: each step borrows it, so the caller keeps the
/// parser's diagnostics (`rejected_calls`, `ended_in_tool_block`) and bindings can keep
/// the parser behind their own lock.
///
/// A runner is per response, like the parser it is stepped with; feed it every engine
/// step of that response with the same parser, the last one with a finish reason.
#[derive(Debug, Clone, Default)]
pub struct StreamRunner {
    options: RunnerOptions,
    emitted_tool_call: bool,
    tokens_fed: usize,
    finish_reason: Option<String>,
    /// The parser's deltas of the current step (kept, so a step allocates no vector).
    items: Vec<StreamItem>,
}

impl StreamRunner {
    /// A runner for one response with the request's `options`.
    pub fn new(options: RunnerOptions) -> Self {
        StreamRunner {
            options,
            ..Default::default()
        }
    }

    /// Feeds one engine step. A `finish_reason` marks the step final: the parser releases
    /// what it held and the returned last delta carries the (rewritten) reason.
    ///
    /// # Errors
    ///
    /// The parser's error for this chunk ([`crate::Error::AlreadyFinished`] after the
    /// final step, [`crate::Error::BufferLimit`]); the runner's own state is unchanged.
    pub fn step(
        &mut self,
        parser: &mut ResponseParser,
        text: &str,
        token_ids: Option<&[u32]>,
        logprobs: Option<Value>,
        finish_reason: Option<&str>,
    ) -> Result<Vec<RunnerDelta>> {
        let mut out = Vec::new();
        self.step_into(parser, text, token_ids, logprobs, finish_reason, &mut out)?;
        Ok(out)
    }

    /// [`step`](Self::step) into `out`, which is cleared first: a caller that keeps the
    /// vector (one per stream) spends no allocation on it per step.
    ///
    /// # Errors
    ///
    /// As [`step`](Self::step); `out` is then left empty.
    // Inlined into a server's per-step loop as it was while it had one caller: out of
    // line (ServeStream calls it too) a token step paid ~60 instructions more in
    // `benches/wire_steps.rs` for the arguments and the metadata no longer folded.
    #[inline]
    pub fn step_into(
        &mut self,
        parser: &mut ResponseParser,
        text: &str,
        token_ids: Option<&[u32]>,
        logprobs: Option<Value>,
        finish_reason: Option<&str>,
        out: &mut Vec<RunnerDelta>,
    ) -> Result<()> {
        out.clear();
        let final_ = finish_reason.is_some();
        let mut items = std::mem::take(&mut self.items);
        let parsed = parser.stream_chunk_into(text, token_ids, final_, &mut items);
        if let Err(e) = parsed {
            items.clear();
            self.items = items;
            return Err(e);
        }
        if let Some(ids) = token_ids {
            self.tokens_fed += ids.len();
        }
        for (mut delta, flag) in items.drain(..) {
            if flag && !self.options.parallel_tool_calls {
                delta.tool_calls.retain(|t| t.index == 0);
                if delta.tool_calls.is_empty() {
                    continue;
                }
            }
            self.emitted_tool_call |= flag;
            out.push(RunnerDelta {
                emitted_tool_call: flag,
                delta,
                ..Default::default()
            });
        }
        self.items = items;
        let finish = finish_reason.map(|r| self.rewrite(r));
        if let Some(f) = &finish {
            self.finish_reason = Some(f.clone());
        }
        let has_meta = token_ids.is_some_and(|t| !t.is_empty()) || logprobs.is_some();
        if out.is_empty() && (finish.is_some() || has_meta) {
            out.push(RunnerDelta {
                delta: DeltaMessage {
                    content: Some(String::new()),
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let cut_call = if final_ {
            parser
                .cut_call()
                .filter(|&i| i == 0 || self.options.parallel_tool_calls)
        } else {
            None
        };
        if let Some(last) = out.last_mut() {
            last.token_ids = token_ids.map(<[u32]>::to_vec);
            last.logprobs = logprobs;
            last.finish_reason = finish;
            last.cut_call = cut_call;
        }
        Ok(())
    }

    /// `stop` -> `tool_calls` once a call reached the client (and the request allows
    /// calls); any other reason is kept.
    fn rewrite(&self, reason: &str) -> String {
        if reason == "stop" && self.emitted_tool_call && self.options.rewrite_finish_reason {
            "tool_calls".to_owned()
        } else {
            reason.to_owned()
        }
    }

    /// Whether a tool call reached the client.
    pub fn emitted_tool_call(&self) -> bool {
        self.emitted_tool_call
    }

    /// The final (rewritten) finish reason, once the final step was fed.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// Whether the final step (one with a finish reason) was fed.
    pub fn is_finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Usage of the response. `completion_tokens` defaults to the number of token ids
    /// fed; reasoning tokens come from the parser (None when it cannot count them).
    pub fn usage(
        &self,
        parser: &ResponseParser,
        prompt_tokens: Option<usize>,
        completion_tokens: Option<usize>,
    ) -> Usage {
        Usage {
            prompt_tokens: prompt_tokens.unwrap_or(0),
            completion_tokens: completion_tokens.unwrap_or(self.tokens_fed),
            reasoning_tokens: parser.reasoning_tokens(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ParserConfig, ToolSpec};

    fn parser() -> ResponseParser {
        ResponseParser::new(&ParserConfig {
            tool_parser: Some("qwen".into()),
            reasoning_parser: Some("qwen3".into()),
            tools: Some(vec![
                ToolSpec {
                    name: "f".into(),
                    parameters: None,
                },
                ToolSpec {
                    name: "g".into(),
                    parameters: None,
                },
            ]),
            reasoning_tag_ids: Some((1, 2)),
            ..Default::default()
        })
        .unwrap()
    }

    const CALLS: &str = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": {\"a\": 1}}</tool_call>";

    #[test]
    fn metadata_rides_on_the_last_delta_only() {
        let mut p = parser();
        let mut r = StreamRunner::default();
        let out = r
            .step(
                &mut p,
                "plan</think>answer<tool_call>{\"name\": \"f\"",
                Some(&[1, 7, 2, 8, 9]),
                Some(serde_json::json!([1, 2, 3])),
                None,
            )
            .unwrap();
        assert_eq!(out.len(), 3);
        assert!(out[..2]
            .iter()
            .all(|d| d.token_ids.is_none() && d.logprobs.is_none()));
        assert_eq!(out[2].token_ids.as_deref(), Some(&[1, 7, 2, 8, 9][..]));
        assert!(out[2].logprobs.is_some());
        assert!(out[2].emitted_tool_call);
    }

    #[test]
    fn empty_step_with_metadata_yields_one_empty_delta() {
        let mut p = parser();
        let mut r = StreamRunner::default();
        // A held tag prefix produces no delta, but the token must still be reported.
        let out = r.step(&mut p, "x</thi", None, None, None).unwrap();
        assert_eq!(out.len(), 1);
        let out = r.step(&mut p, "", Some(&[5]), None, None).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].delta.content.as_deref(), Some(""));
        assert_eq!(out[0].token_ids.as_deref(), Some(&[5][..]));
        // Nothing to say and no metadata: nothing.
        assert!(r.step(&mut p, "", None, None, None).unwrap().is_empty());
        let out = r.step(&mut p, "", None, None, Some("length")).unwrap();
        assert_eq!(out.last().unwrap().finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn finish_reason_rewrite_and_parallel_calls() {
        let mut p = parser();
        let mut r = StreamRunner::default();
        let out = r.step(&mut p, CALLS, None, None, Some("stop")).unwrap();
        assert_eq!(
            out.last().unwrap().finish_reason.as_deref(),
            Some("tool_calls")
        );
        let n: usize = out.iter().map(|d| d.delta.tool_calls.len()).sum();
        assert!(out
            .iter()
            .flat_map(|d| &d.delta.tool_calls)
            .any(|t| t.index == 1));
        assert!(n >= 2);

        let mut p = parser();
        let mut r = StreamRunner::new(RunnerOptions {
            parallel_tool_calls: false,
            ..Default::default()
        });
        let out = r.step(&mut p, CALLS, None, None, Some("stop")).unwrap();
        assert!(out
            .iter()
            .flat_map(|d| &d.delta.tool_calls)
            .all(|t| t.index == 0));

        let mut p = parser();
        let mut r = StreamRunner::new(RunnerOptions {
            rewrite_finish_reason: false,
            ..Default::default()
        });
        let out = r.step(&mut p, CALLS, None, None, Some("stop")).unwrap();
        assert_eq!(out.last().unwrap().finish_reason.as_deref(), Some("stop"));

        // No call: stop stays stop; length is never rewritten.
        let mut p = parser();
        let mut r = StreamRunner::default();
        let out = r.step(&mut p, "hi", None, None, Some("stop")).unwrap();
        assert_eq!(out.last().unwrap().finish_reason.as_deref(), Some("stop"));
        let mut p = parser();
        let mut r = StreamRunner::default();
        let out = r.step(&mut p, CALLS, None, None, Some("length")).unwrap();
        assert_eq!(out.last().unwrap().finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn usage_counts() {
        let mut p = parser();
        let mut r = StreamRunner::default();
        r.step(&mut p, "ab", Some(&[1, 5, 6]), None, None).unwrap();
        r.step(&mut p, "</think>c", Some(&[2, 7]), None, Some("stop"))
            .unwrap();
        let u = r.usage(&p, Some(10), None);
        assert_eq!(
            u,
            Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                reasoning_tokens: Some(2)
            }
        );
        assert_eq!(u.total_tokens(), 15);
        assert_eq!(r.usage(&p, Some(10), Some(40)).completion_tokens, 40);
    }
}
