//! The declaration of a framed-message dialect ([`FramedSyntax`]) and its checks; the
//! engine that reads it is `crate::response::framed`.
//!
//! A framed dialect writes its whole response as messages: a header, then a body, then
//! an end marker. The header's route key — a channel word, a recipient (`to=R`), or
//! the kind token that opened the body — sends the body to reasoning, content, a tool
//! call or aside. Everything that differs between such models is data: the markers and
//! what each does, the routes, and each call route's payload grammar (an existing
//! grammar family's [`Syntax`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grammars::{Family, FieldError, Syntax};

/// What a framing marker does ([`FrameMarker::role`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MarkerRole {
    /// Begins a header (`<|start|>`, `<|message_model|>`). Inside a body it ends the
    /// message first: the model left out the end marker.
    Start,
    /// A header field: the word after it is the channel (`<|channel|>`). Inside a body
    /// it is body text.
    Channel,
    /// A header field: the word after it is the content type (`<|constrain|>`); it does
    /// not route. Inside a body it is body text.
    Constrain,
    /// Ends the header and opens the body (`<|message|>`). Inside a body it is body
    /// text, unless the dialect reopens on it ([`FramedSyntax::reopen_on_message`]).
    Message,
    /// Ends the header and opens the body, and is the route key itself (Inkling's
    /// `<|content_thinking|>`). Inside a body it ends the message and opens a new one
    /// of its kind.
    Kind,
    /// Ends the body (`<|end|>`, `<|eom|>`, `<|end_message|>`).
    End,
}

/// One framing marker: its text, what it does, and its token id when the dialect's
/// vocabulary is known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameMarker {
    /// The marker as decoded text (`<|message|>`).
    pub text: String,
    /// What it does.
    pub role: MarkerRole,
    /// The special token's id in the model's vocabulary, when known: with token ids a
    /// marker counts only where that token wrote it (the same text spelt in ordinary
    /// tokens is text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    /// An `end` marker that is a stop token of the model: serving engines strip it from
    /// the output (Beam's `<|call|>`), so the output may end where it stood. Where the
    /// output ends inside a call message whose body is one block, the call is finished
    /// when its payload is at a boundary (no parameter or value open, only whitespace
    /// after the last one); a value left open is still cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stop_token: bool,
}

/// Where a routed body goes ([`FrameRoute::to`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RouteTo {
    /// `reasoning_content`.
    Reasoning,
    /// `content`.
    Content,
    /// A tool call, read by the route's [`call`](FrameRoute::call) payload. With no
    /// tools in the request (or `tool_choice` `none`) the body is content.
    Call,
    /// Neither content, reasoning nor a call: the message is kept aside, whole, in the
    /// parser's `builtin_calls` (recipient, channel, body), for a server that wants it.
    Aside,
}

/// Where a call's name comes from ([`CallPayload::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallName {
    /// The payload names its call (an invoke's `name`, an envelope's `name` field).
    #[default]
    Payload,
    /// The header's recipient is the name; the payload holds the arguments only.
    Recipient,
}

/// Tool blocks written inside a call message's body (Muse's
/// `<atem:function_calls>...</atem:function_calls>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BodyBlock {
    /// The tag that opens a block inside the body.
    pub open: String,
    /// The tag that closes it.
    pub close: String,
}

/// How a call route reads its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallPayload {
    /// The payload grammar: an existing family's syntax (`xml`, `json_envelope`).
    pub syntax: Syntax,
    /// Where the name comes from (`payload` when left out).
    #[serde(default)]
    pub name: CallName,
    /// The calls sit in blocks inside the body; left out, the body is one block (it
    /// opens with the body and closes at the message's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<BodyBlock>,
    /// A name written twice around a dot (`get_weather.get_weather`) is the single
    /// name when only that is a request tool: a template that renders a bare tool
    /// name as the namespace `NAME.*` makes the model write it so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub doubled_names: bool,
    /// How the model writes a call message, for the decoding constraint of
    /// `tool_choice` `required` or a named function; left out, such a choice is
    /// refused for this dialect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<ForcedCall>,
}

/// The text around a forced call ([`CallPayload::forced`]): what the dialect's template
/// writes, so the constraint makes the model write a call the parser reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForcedCall {
    /// The call message's header, from the response's start; `{name}` is the function's
    /// name (` to={name}<|message|>`).
    pub open: String,
    /// What ends the call message (`<|eom|>`).
    pub close: String,
    /// What comes between two call messages (`<|start|>assistant`); left out, one call
    /// per response (its close ends generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// A reasoning message the model may write first: its open, and its close with
    /// what opens the next message (`<|eom|><|start|>assistant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ForcedReasoning>,
}

/// A reasoning message before a forced call ([`ForcedCall::reasoning`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForcedReasoning {
    /// Its header (` to=self<|message|>`).
    pub open: String,
    /// Its end, with the next message's opening (`<|eom|><|start|>assistant`).
    pub close: String,
}

/// One routing rule ([`FramedSyntax::routes`]): the first rule whose conditions all
/// hold decides where a body goes; a rule with no condition matches every header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameRoute {
    /// The kind marker that opened the body is one of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Vec<String>>,
    /// The header's channel is one of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Vec<String>>,
    /// The header's recipient is one of these; `null` stands for a header without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<Vec<Option<String>>>,
    /// The header has a recipient (`true`) or has none (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_recipient: Option<bool>,
    /// Where the body goes.
    pub to: RouteTo,
    /// For `to: call`: how the body is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CallPayload>,
}

impl FrameRoute {
    /// Whether this rule matches a header.
    pub(crate) fn matches(
        &self,
        kind: Option<&str>,
        channel: Option<&str>,
        recipient: Option<&str>,
    ) -> bool {
        let kind_ok = self
            .kind
            .as_ref()
            .is_none_or(|ks| kind.is_some_and(|k| ks.iter().any(|x| x == k)));
        let channel_ok = self
            .channel
            .as_ref()
            .is_none_or(|cs| channel.is_some_and(|c| cs.iter().any(|x| x == c)));
        let recipient_ok = self
            .recipient
            .as_ref()
            .is_none_or(|rs| rs.iter().any(|r| r.as_deref() == recipient));
        let has_ok = self.has_recipient.is_none_or(|h| h == recipient.is_some());
        kind_ok && channel_ok && recipient_ok && has_ok
    }
}

/// A framed-message dialect (see the module docs): a response parser declared as data,
/// `{"framed": {...}}` in a `response_parsers` entry.
///
/// How a response is read: it starts in a header (the prompt ends with the role's
/// opening). A header is the text and header markers up to a `message` or `kind`
/// marker; its words are a role, a recipient (`to=R`, the first word so spelt), a
/// channel (the first word after a `channel` marker) and a content type. The body then
/// goes where the first matching route says, up to an `end` marker (or a `start` or
/// `kind` marker: the model left the end out). With no route matching, the body is
/// content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FramedSyntax {
    /// The framing markers.
    pub markers: Vec<FrameMarker>,
    /// The routing rules, first match wins.
    pub routes: Vec<FrameRoute>,
    /// A `message` marker inside a body ends the message and opens a new one whose
    /// header is the recipient clause right before it (` to=R`): a model that leaves a
    /// message without its end marker writes the next header bare (Muse).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reopen_on_message: bool,
}

impl FramedSyntax {
    /// The call route's payload (validation allows at most one call route).
    pub(crate) fn call_payload(&self) -> Option<&CallPayload> {
        self.routes.iter().find_map(|r| r.call.as_ref())
    }

    /// Whether the call payload's grammar types values by the request's schemas.
    pub(crate) fn uses_schemas(&self) -> bool {
        self.call_payload()
            .is_some_and(|c| c.syntax.family().uses_schemas())
    }

    /// Whether an `end` marker is a stop token ([`FrameMarker::stop_token`]): the
    /// output may end where it stood.
    pub(crate) fn ends_with_stop_token(&self) -> bool {
        self.markers
            .iter()
            .any(|m| m.role == MarkerRole::End && m.stop_token)
    }

    /// The markers of a role.
    pub(crate) fn markers_of(&self, role: MarkerRole) -> impl Iterator<Item = &str> {
        self.markers
            .iter()
            .filter(move |m| m.role == role)
            .map(|m| m.text.as_str())
    }

    /// Checks what serde cannot, naming the bad field by its path.
    pub(crate) fn validate(&self) -> Result<(), FieldError> {
        if self.markers.is_empty() {
            return Err(FieldError::new("markers", "is empty"));
        }
        for (i, m) in self.markers.iter().enumerate() {
            let at = format!("markers[{i}]");
            if m.text.is_empty() {
                return Err(FieldError::new(format!("{at}.text"), "is empty"));
            }
            if self.markers[..i].iter().any(|o| o.text == m.text) {
                return Err(FieldError::new(format!("{at}.text"), "is declared twice"));
            }
            if let Some(id) = m.id {
                if self.markers[..i].iter().any(|o| o.id == Some(id)) {
                    return Err(FieldError::new(format!("{at}.id"), "is declared twice"));
                }
            }
            if m.stop_token && m.role != MarkerRole::End {
                return Err(FieldError::new(
                    format!("{at}.stop_token"),
                    "only an `end` marker ends the output as a stop token",
                ));
            }
        }
        let has = |r: MarkerRole| self.markers.iter().any(|m| m.role == r);
        if !has(MarkerRole::End) {
            return Err(FieldError::new(
                "markers",
                "no `end` marker: a body never ends",
            ));
        }
        if !has(MarkerRole::Message) && !has(MarkerRole::Kind) {
            return Err(FieldError::new(
                "markers",
                "no `message` or `kind` marker: a header never opens a body",
            ));
        }
        if self.reopen_on_message && !has(MarkerRole::Message) {
            return Err(FieldError::new(
                "reopen_on_message",
                "needs a `message` marker",
            ));
        }
        if self.routes.is_empty() {
            return Err(FieldError::new("routes", "is empty"));
        }
        let kinds: Vec<&str> = self.markers_of(MarkerRole::Kind).collect();
        let mut calls = 0;
        for (i, r) in self.routes.iter().enumerate() {
            let at = format!("routes[{i}]");
            if let Some(ks) = &r.kind {
                if let Some(k) = ks.iter().find(|k| !kinds.contains(&k.as_str())) {
                    return Err(FieldError::new(
                        format!("{at}.kind"),
                        format!("{k:?} is not a `kind` marker"),
                    ));
                }
            }
            if r.channel.is_some() && !has(MarkerRole::Channel) {
                return Err(FieldError::new(
                    format!("{at}.channel"),
                    "the dialect has no `channel` marker",
                ));
            }
            for (field, list_empty) in [
                ("kind", r.kind.as_ref().is_some_and(Vec::is_empty)),
                ("channel", r.channel.as_ref().is_some_and(Vec::is_empty)),
                ("recipient", r.recipient.as_ref().is_some_and(Vec::is_empty)),
            ] {
                if list_empty {
                    return Err(FieldError::new(
                        format!("{at}.{field}"),
                        "is empty (it would match nothing)",
                    ));
                }
            }
            match (r.to, &r.call) {
                (RouteTo::Call, None) => {
                    return Err(FieldError::new(
                        format!("{at}.call"),
                        "missing: a call route says how its body is read",
                    ))
                }
                (RouteTo::Call, Some(c)) => {
                    calls += 1;
                    check_payload(c).map_err(|e| e.within(&format!("{at}.call")))?;
                }
                (_, Some(_)) => {
                    return Err(FieldError::new(
                        format!("{at}.call"),
                        "only a route to `call` reads a payload",
                    ))
                }
                (_, None) => {}
            }
        }
        if calls > 1 {
            return Err(FieldError::new(
                "routes",
                "more than one route to `call`: one payload grammar reads every call",
            ));
        }
        Ok(())
    }
}

/// A call payload's syntax is a family the framing can drive, and its fields agree.
fn check_payload(c: &CallPayload) -> Result<(), FieldError> {
    c.syntax.validate().map_err(|e| e.within("syntax"))?;
    let family = c.syntax.family();
    if !matches!(family, Family::Xml | Family::JsonEnvelope) {
        return Err(FieldError::new(
            "syntax.family",
            format!(
                "{} is not read inside framed messages (xml, json_envelope are)",
                family.name()
            ),
        ));
    }
    if c.name == CallName::Recipient {
        let Syntax::Xml(x) = &c.syntax else {
            return Err(FieldError::new(
                "name",
                "a name from the recipient needs an xml syntax (its parameters are the body)",
            ));
        };
        if !x.function_open.is_empty() {
            return Err(FieldError::new(
                "syntax.function_open",
                "the header names the call: the body holds parameters only",
            ));
        }
    }
    if let Some(f) = &c.forced {
        if !f.open.contains("{name}") {
            return Err(FieldError::new("forced.open", "does not hold {name}"));
        }
        if f.close.is_empty() {
            return Err(FieldError::new("forced.close", "is empty"));
        }
        if f.next.as_deref() == Some("") {
            return Err(FieldError::new("forced.next", "is empty"));
        }
        if let Some(r) = &f.reasoning {
            if r.open.is_empty() || r.close.is_empty() {
                return Err(FieldError::new(
                    "forced.reasoning",
                    "open and close are non-empty",
                ));
            }
        }
    }
    if let Some(b) = &c.block {
        if b.open.is_empty() {
            return Err(FieldError::new("block.open", "is empty"));
        }
        if b.close.is_empty() {
            return Err(FieldError::new("block.close", "is empty"));
        }
    }
    Ok(())
}
