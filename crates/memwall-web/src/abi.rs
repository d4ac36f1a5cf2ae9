//! The WebAssembly module's exports, with no glue library: the page's script (`web/memwall.js`)
//! allocates a buffer with [`memwall_alloc`], writes the request's UTF-8 (and an imported
//! file's bytes) into it, calls [`memwall_call`], reads the answer at [`memwall_out_ptr`] for
//! [`memwall_out_len`] bytes, and frees its buffers with [`memwall_free`].
//!
//! The module's memory is only touched through these functions, and the page calls them
//! from one thread, so the pointers handed out stay valid until freed.

// Raw pointers cross the module's boundary here and nowhere else.
#![allow(unsafe_code)]

use std::cell::RefCell;

thread_local! {
    /// The last answer, until the next call.
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// What [`memwall_call`] returns: the answer is a JSON document.
pub const OK_JSON: u32 = 0;
/// The answer is a file's bytes.
pub const OK_BYTES: u32 = 1;
/// The answer is an error's message (UTF-8).
pub const ERROR: u32 = 2;

/// A buffer of `len` bytes for the caller to fill, freed with [`memwall_free`].
#[unsafe(no_mangle)]
pub extern "C" fn memwall_alloc(len: usize) -> *mut u8 {
    let mut v = Vec::<u8>::with_capacity(len.max(1));
    let p = v.as_mut_ptr();
    std::mem::forget(v);
    p
}

/// Free a buffer of [`memwall_alloc`].
///
/// # Safety
/// `ptr` and `len` are one earlier [`memwall_alloc`]'s pointer and length, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memwall_free(ptr: *mut u8, len: usize) {
    // SAFETY: the caller passes back what memwall_alloc gave (capacity len.max(1)).
    drop(unsafe { Vec::from_raw_parts(ptr, 0, len.max(1)) });
}

/// Answer the request of `req_len` bytes at `req` (UTF-8 JSON), with `data_len` bytes at
/// `data` for an import (0 for none): [`OK_JSON`], [`OK_BYTES`] or [`ERROR`], the answer or
/// message at [`memwall_out_ptr`].
///
/// # Safety
/// `req` and `data` point at `req_len` and `data_len` readable bytes (either may be null
/// with a length of 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memwall_call(req: *const u8, req_len: usize, data: *const u8, data_len: usize) -> u32 {
    let slice = |p: *const u8, n: usize| -> &[u8] {
        if p.is_null() || n == 0 {
            &[]
        } else {
            // SAFETY: the caller guarantees n readable bytes at p.
            unsafe { std::slice::from_raw_parts(p, n) }
        }
    };
    let (code, out) = match std::str::from_utf8(slice(req, req_len)) {
        Err(e) => (ERROR, format!("request: not UTF-8 ({e})").into_bytes()),
        Ok(text) => match crate::answer(text, slice(data, data_len)) {
            Ok(crate::Answer::Json(j)) => (OK_JSON, j.into_bytes()),
            Ok(crate::Answer::Bytes(b)) => (OK_BYTES, b),
            Err(m) => (ERROR, m.into_bytes()),
        },
    };
    OUT.with(|o| *o.borrow_mut() = out);
    code
}

/// Where the last answer starts.
#[unsafe(no_mangle)]
pub extern "C" fn memwall_out_ptr() -> *const u8 {
    OUT.with(|o| o.borrow().as_ptr())
}

/// The last answer's length, bytes.
#[unsafe(no_mangle)]
pub extern "C" fn memwall_out_len() -> usize {
    OUT.with(|o| o.borrow().len())
}
