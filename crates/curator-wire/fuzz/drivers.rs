//! What each fuzz target does with its bytes. Shared by the `cargo fuzz` targets
//! (`fuzz_targets/`) and the seeded run in the normal test suite (`tests/fuzz_seeded.rs`).
//!
//! Any input is allowed; a driver panics only when the crate panics or a property fails:
//! - whatever decodes, encodes and decodes again to the same value;
//! - errors print (their `Display` does not panic) and name a place inside the input.
#![allow(dead_code, reason = "each target uses one driver")]

use bytes::BytesMut;
use curator_wire::codec::{
    ClientCodec, ClientFrame, ReplyFrame, RequestFrame, ServerCodec, ServerFrame,
};
use curator_wire::proto::{OpCode, Record, Request, Response, WatcherEvent};
use curator_wire::{CodecError, DecodeError};
use tokio_util::codec::{Decoder, Encoder};

/// The limit the stream drivers decode with: small, so that the limit is exercised too.
const MAX_FRAME: usize = 1 << 16;

/// The first byte of a stream input sets the size of the reads the stream arrives in.
fn split_reads(data: &[u8]) -> (usize, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (usize::from(*first % 64) + 1, rest),
        None => (1, data),
    }
}

fn check_error(error: &DecodeError, len: usize, base: usize) {
    let _ = error.to_string();
    assert!(
        error.offset() <= len + base,
        "{error} points past the input ({len} bytes after {base})"
    );
}

fn check_codec_error(error: &CodecError) {
    let _ = error.to_string();
    assert!(
        matches!(error, CodecError::Decode(_)),
        "only decoding fails: {error}"
    );
}

/// What a client reads: frames in reads of any size; every reply body read under every opcode
/// and as a notification.
pub(crate) fn client_stream(data: &[u8]) {
    let (read_size, stream) = split_reads(data);
    let mut codec = ClientCodec::new().with_max_frame(MAX_FRAME);
    let mut buffer = BytesMut::new();
    for read in stream.chunks(read_size) {
        buffer.extend_from_slice(read);
        loop {
            match codec.decode(&mut buffer) {
                Ok(Some(frame)) => check_server_frame(&frame),
                Ok(None) => break,
                Err(error) => return check_codec_error(&error),
            }
        }
    }
    match codec.decode_eof(&mut buffer) {
        Ok(frame) => assert!(frame.is_none() && buffer.is_empty()),
        Err(error) => check_codec_error(&error),
    }
}

fn check_server_frame(frame: &ServerFrame) {
    // The frame itself: the server's encoding of it reads back the same.
    let mut wire = BytesMut::new();
    ServerCodec::new().encode(frame.clone(), &mut wire).unwrap();
    let mut client = ClientCodec::new();
    if let ServerFrame::Reply(_) = frame {
        let mut hello = BytesMut::new();
        ServerCodec::new()
            .encode(ServerFrame::Connected(Default::default()), &mut hello)
            .unwrap();
        client.decode(&mut hello).unwrap().unwrap();
    }
    assert_eq!(client.decode(&mut wire).unwrap().as_ref(), Some(frame));
    assert!(wire.is_empty());

    if let ServerFrame::Reply(reply) = frame {
        for op in OpCode::ALL {
            match reply.decode(*op) {
                Ok(Ok(response)) => {
                    let again = ReplyFrame::ok(reply.header.xid, reply.header.zxid, &response);
                    assert_eq!(again.decode(*op), Ok(Ok(response)), "{op:?}");
                }
                Ok(Err(code)) => assert_eq!(code, reply.header.err),
                Err(error) => check_error(&error, reply.body.len(), 16),
            }
        }
        match reply.decode_event() {
            Ok(event) => {
                let again = ReplyFrame::notification(reply.header.zxid, &event);
                assert_eq!(again.decode_event(), Ok(event));
            }
            Err(error) => check_error(&error, reply.body.len(), 16),
        }
    }
}

/// A reply body, read as the reply to every opcode, and as a notification.
pub(crate) fn reply_bodies(data: &[u8]) {
    for op in OpCode::ALL {
        match Response::decode(*op, data) {
            Ok(response) => {
                let mut body = BytesMut::new();
                response.encode(&mut body);
                assert_eq!(Response::decode(*op, &body), Ok(response), "{op:?}");
            }
            Err(error) => check_error(&error, data.len(), 0),
        }
    }
    match WatcherEvent::decode(data) {
        Ok(event) => assert_eq!(WatcherEvent::decode(&event.to_bytes()), Ok(event)),
        Err(error) => check_error(&error, data.len(), 0),
    }
}

/// A request body, read as the request of every opcode.
pub(crate) fn request_bodies(data: &[u8]) {
    for op in OpCode::ALL {
        match Request::decode(*op, data) {
            Ok(request) => {
                assert_eq!(request.op_code(), *op);
                let mut body = BytesMut::new();
                request.encode(&mut body);
                assert_eq!(Request::decode(*op, &body), Ok(request), "{op:?}");
            }
            Err(error) => check_error(&error, data.len(), 0),
        }
    }
}

/// What a server reads: frames in reads of any size; every request body read by its opcode.
pub(crate) fn server_stream(data: &[u8]) {
    let (read_size, stream) = split_reads(data);
    let mut codec = ServerCodec::new().with_max_frame(MAX_FRAME);
    let mut buffer = BytesMut::new();
    for read in stream.chunks(read_size) {
        buffer.extend_from_slice(read);
        loop {
            match codec.decode(&mut buffer) {
                Ok(Some(frame)) => check_client_frame(&frame),
                Ok(None) => break,
                Err(error) => return check_codec_error(&error),
            }
        }
    }
    match codec.decode_eof(&mut buffer) {
        Ok(frame) => assert!(frame.is_none() && buffer.is_empty()),
        Err(error) => check_codec_error(&error),
    }
}

fn check_client_frame(frame: &ClientFrame) {
    let mut wire = BytesMut::new();
    ClientCodec::new().encode(frame.clone(), &mut wire).unwrap();
    let mut server = ServerCodec::new();
    if let ClientFrame::Request(_) = frame {
        let mut hello = BytesMut::new();
        ClientCodec::new()
            .encode(ClientFrame::Connect(Default::default()), &mut hello)
            .unwrap();
        server.decode(&mut hello).unwrap().unwrap();
    }
    assert_eq!(server.decode(&mut wire).unwrap().as_ref(), Some(frame));

    if let ClientFrame::Request(request) = frame {
        match request.decode() {
            Ok(decoded) => {
                let again = RequestFrame::new(request.header.xid, &decoded);
                assert_eq!(again.header, request.header);
                assert_eq!(again.decode(), Ok(decoded));
            }
            Err(error) => check_error(&error, request.body.len(), 8),
        }
    }
}
