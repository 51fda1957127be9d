#![doc = include_str!("../README.md")]

pub mod codec;
mod error;
mod jute;
pub mod proto;

pub use codec::{ClientCodec, ClientFrame, ReplyFrame, RequestFrame, ServerCodec, ServerFrame};
pub use error::{CodecError, DecodeError, DecodeErrorKind};
