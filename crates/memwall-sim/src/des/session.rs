//! Where the session stands: its turns (prompt, generation, think time), the turn in
//! progress, and the context the model holds.

use memwall_spec::{ContextPolicy, Scenario, Turn};

use super::event::SimEvent;

/// The session's cursor and context.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    turns: Vec<Turn>,
    /// Repetitions of the turn list (0: until the run ends).
    repeat: u32,
    /// Whether each repetition starts with an empty context.
    fresh_context: bool,
    /// Index in the turn list.
    pub idx: usize,
    /// Repetition of the list.
    rep: u32,
    /// Turns started overall.
    pub global: u32,
    /// Prompt tokens of the turn not yet prefilled.
    pub prompt_left: u64,
    /// Tokens of the turn not yet generated.
    pub gen_left: u64,
    think_done: bool,
    /// When the turn's prompt was submitted, seconds.
    pub turn_start_s: f64,
    /// Tokens held in the context.
    pub ctx: u64,
    /// Tokens in the context before the first turn ([`Scenario::history_tokens`]); a fresh
    /// repetition starts from them again.
    history: u64,
    /// Tokens the context can hold (a policy may lower it).
    pub capacity: u64,
}

impl Session {
    /// The session of `s`: its `sim.session` turns, or one turn of the workload's prompt and
    /// generation.
    pub fn new(s: &Scenario) -> Self {
        let turns = if s.sim.session.turns.is_empty() {
            vec![Turn { prompt_tokens: s.workload.prompt_tokens, gen_tokens: s.workload.gen_tokens, think_s: 0.0 }]
        } else {
            s.sim.session.turns.clone()
        };
        Session {
            repeat: s.sim.session.repeat,
            fresh_context: s.sim.session.fresh_context,
            idx: 0,
            rep: 0,
            global: 0,
            prompt_left: turns[0].prompt_tokens,
            gen_left: turns[0].gen_tokens,
            think_done: false,
            turn_start_s: 0.0,
            ctx: s.history_tokens(),
            history: s.history_tokens(),
            capacity: s.workload.context_tokens,
            turns,
        }
    }

    /// Whether the turn's prompt is prefilled and its tokens generated.
    pub fn turn_done(&self) -> bool {
        self.prompt_left == 0 && self.gen_left == 0
    }

    /// The think time after the turn, once: `Some(seconds)` the first time it is asked for
    /// (when the turn has one), then `None`.
    pub fn think(&mut self) -> Option<f64> {
        let think = self.turns[self.idx].think_s;
        if think > 0.0 && !self.think_done {
            self.think_done = true;
            return Some(think);
        }
        None
    }

    /// Move to the next turn, submitted at `start_s`; false when the session's repetitions
    /// are over.
    pub fn next_turn(&mut self, start_s: f64) -> bool {
        let (mut idx, mut rep) = (self.idx + 1, self.rep);
        if idx == self.turns.len() {
            idx = 0;
            rep += 1;
            if self.repeat != 0 && rep >= self.repeat {
                return false;
            }
            if self.fresh_context {
                self.ctx = self.history.min(self.capacity);
            }
        }
        (self.idx, self.rep) = (idx, rep);
        self.global += 1;
        self.prompt_left = self.turns[idx].prompt_tokens;
        self.gen_left = self.turns[idx].gen_tokens;
        self.think_done = false;
        self.turn_start_s = start_s;
        true
    }

    /// The first turn is submitted when its first step starts (after the model load).
    pub fn first_turn_starts(&mut self, start_s: f64) {
        if self.global == 0 && self.prompt_left == self.turns[0].prompt_tokens {
            self.turn_start_s = start_s;
        }
    }

    /// Tokens of the next prefill chunk: the prompt left, at most `ubatch` and the capacity.
    pub fn chunk(&self, ubatch: u64) -> u64 {
        self.prompt_left.min(ubatch).min(self.capacity)
    }

    /// Shift the context so that `n` more tokens fit (dropping the oldest); the shift, if any.
    pub fn make_room(&mut self, n: u64) -> Option<SimEvent> {
        if self.ctx + n > self.capacity {
            let keep = self.capacity.saturating_sub(n);
            let shift = SimEvent::ContextShift { from: self.ctx, to: keep };
            self.ctx = keep;
            return Some(shift);
        }
        None
    }

    /// A prefill chunk of `n` tokens is done; true when it completed the first turn's prompt
    /// (the time to first token ends there).
    pub fn prefilled(&mut self, n: u64) -> bool {
        self.ctx += n;
        self.prompt_left -= n;
        self.prompt_left == 0 && self.global == 0 && self.idx == 0
    }

    /// A token was generated.
    pub fn decoded(&mut self) {
        self.ctx += 1;
        self.gen_left -= 1;
    }

    /// Cut the context's capacity to `keep_tokens` (at least 1).
    pub fn truncate(&mut self, keep_tokens: u64) {
        self.capacity = self.capacity.min(keep_tokens).max(1);
        self.ctx = self.ctx.min(self.capacity);
    }

    /// Tokens the KV cache holds memory for: the capacity when allocated up front, else the
    /// context (at least 1).
    pub fn kv_tokens(&self, policy: ContextPolicy) -> u64 {
        match policy {
            ContextPolicy::Allocate => self.capacity,
            ContextPolicy::Grow => self.ctx.max(1),
        }
    }
}
