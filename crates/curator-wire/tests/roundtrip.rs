//! Every record, request, reply and frame encodes and decodes back to itself, for values from a
//! seeded generator; every cut short encoding and every encoding with a byte too many is
//! refused with a typed error.

#[path = "support/values.rs"]
mod values;

use std::fmt::Debug;

use bytes::BytesMut;
use curator_wire::codec::{ClientCodec, ClientFrame, ServerCodec, ServerFrame};
use curator_wire::proto::*;
use curator_wire::{CodecError, DecodeErrorKind};
use tokio_util::codec::{Decoder, Encoder};
use values::Values;

/// How many values of each kind; `CURATOR_WIRE_ROUNDTRIPS` sets another number.
fn cases() -> usize {
    std::env::var("CURATOR_WIRE_ROUNDTRIPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

const SEED: u64 = 0x5eed_c0de;

/// Whether the record ends in a field that may be left out (the connect records' `readOnly`).
#[derive(Clone, Copy, PartialEq)]
enum Tail {
    /// No such field.
    Required,
    /// Present: the encoding without its last byte decodes too.
    Optional,
    /// Absent: the encoding with one byte more decodes too.
    Absent,
}

fn tail_of(read_only: Option<bool>) -> Tail {
    match read_only {
        Some(_) => Tail::Optional,
        None => Tail::Absent,
    }
}

fn check_record<T: Record + PartialEq + Debug>(value: &T, tail: Tail) {
    let bytes = value.to_bytes();
    assert_eq!(&T::decode(&bytes).unwrap(), value, "{bytes:?}");
    for cut in 0..bytes.len() {
        if tail == Tail::Optional && cut == bytes.len() - 1 {
            continue;
        }
        let error = T::decode(&bytes[..cut]).expect_err("a cut encoding decoded");
        assert!(
            matches!(
                error.kind(),
                DecodeErrorKind::Truncated { .. } | DecodeErrorKind::LengthPastEnd { .. }
            ),
            "{value:?} cut at {cut}: {error}"
        );
        assert!(error.offset() <= cut, "{error}");
    }
    if tail != Tail::Absent {
        let mut longer = bytes.to_vec();
        longer.push(0);
        let error = T::decode(&longer).expect_err("a byte too many");
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::TrailingBytes { extra: 1 },
            "{error}"
        );
        assert_eq!(error.offset(), bytes.len());
    }
}

fn each(mut check: impl FnMut(&mut Values)) {
    let mut values = Values::new(SEED);
    for _ in 0..cases() {
        check(&mut values);
    }
}

#[test]
fn data_records_round_trip() {
    each(|v| {
        check_record(&v.stat(), Tail::Required);
        check_record(&v.id(), Tail::Required);
        for acl in v.acl() {
            check_record(&acl, Tail::Required);
        }
        check_record(&v.client_info(), Tail::Required);
    });
}

#[test]
fn handshake_and_header_records_round_trip() {
    each(|v| {
        let request = v.connect_request();
        check_record(&request, tail_of(request.read_only));
        let response = v.connect_response();
        check_record(&response, tail_of(response.read_only));
        check_record(&v.request_header(), Tail::Required);
        check_record(&v.reply_header(), Tail::Required);
    });
}

#[test]
fn request_records_round_trip() {
    each(|v| {
        check_record(&v.create_request(), Tail::Required);
        check_record(&v.create_ttl_request(), Tail::Required);
        check_record(&v.delete_request(), Tail::Required);
        check_record(&v.exists_request(), Tail::Required);
        check_record(&v.get_data_request(), Tail::Required);
        check_record(&v.get_children_request(), Tail::Required);
        check_record(&v.check_version_request(), Tail::Required);
        check_record(&v.set_data_request(), Tail::Required);
        check_record(&GetAclRequest { path: v.string() }, Tail::Required);
        check_record(&SyncRequest { path: v.string() }, Tail::Required);
        check_record(&GetEphemeralsRequest { path: v.string() }, Tail::Required);
        check_record(
            &GetAllChildrenNumberRequest { path: v.string() },
            Tail::Required,
        );
        check_record(&v.set_acl_request(), Tail::Required);
        check_record(&v.reconfig_request(), Tail::Required);
        check_record(&v.remove_watches_request(), Tail::Required);
        check_record(&v.add_watch_request(), Tail::Required);
        check_record(&v.auth_packet(), Tail::Required);
        check_record(&GetSaslRequest { token: v.bytes() }, Tail::Required);
        check_record(&v.set_watches(), Tail::Required);
        check_record(&v.set_watches2(), Tail::Required);
        check_record(&v.multi_request(), Tail::Required);
        check_record(&v.multi_read_request(), Tail::Required);
    });
}

#[test]
fn response_records_round_trip() {
    each(|v| {
        check_record(&CreateResponse { path: v.string() }, Tail::Required);
        check_record(&v.create2_response(), Tail::Required);
        check_record(&v.get_data_response(), Tail::Required);
        check_record(
            &GetAclResponse {
                acl: v.acl(),
                stat: v.stat(),
            },
            Tail::Required,
        );
        check_record(
            &GetChildrenResponse {
                children: v.strings(),
            },
            Tail::Required,
        );
        check_record(
            &GetChildren2Response {
                children: v.strings(),
                stat: v.stat(),
            },
            Tail::Required,
        );
        check_record(&SyncResponse { path: v.string() }, Tail::Required);
        check_record(
            &ErrorResponse {
                err: v.error_code(),
            },
            Tail::Required,
        );
        check_record(&SetSaslResponse { token: v.bytes() }, Tail::Required);
        check_record(
            &GetEphemeralsResponse {
                ephemerals: v.strings(),
            },
            Tail::Required,
        );
        check_record(
            &GetAllChildrenNumberResponse {
                total_number: v.i32(),
            },
            Tail::Required,
        );
        check_record(
            &WhoAmIResponse {
                client_info: vec![v.client_info(), v.client_info()],
            },
            Tail::Required,
        );
        check_record(&v.watcher_event(), Tail::Required);
        check_record(&v.multi_response(), Tail::Required);
        check_record(&v.multi_read_response(), Tail::Required);
    });
}

#[test]
fn requests_and_replies_round_trip_by_opcode() {
    each(|v| {
        let (request, response) = v.exchange();
        let op = request.op_code();

        let mut body = BytesMut::new();
        request.encode(&mut body);
        assert_eq!(Request::decode(op, &body).unwrap(), request);
        body.extend_from_slice(&[0]);
        let error = Request::decode(op, &body).unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::TrailingBytes { extra: 1 },
            "{request:?}"
        );

        let mut body = BytesMut::new();
        response.encode(&mut body);
        assert_eq!(Response::decode(op, &body).unwrap(), response, "{op:?}");
        body.extend_from_slice(&[0]);
        let error = Response::decode(op, &body).unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::TrailingBytes { extra: 1 });
    });
}

#[test]
fn opcodes_without_a_request_or_a_reply_are_refused() {
    for op in [
        OpCode::Notification,
        OpCode::Error,
        OpCode::Check,
        OpCode::CreateSession,
        OpCode::DeleteContainer,
    ] {
        let error = Request::decode(op, &[]).unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::UnexpectedOpCode { op });
        let error = Response::decode(op, &[]).unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::UnexpectedOpCode { op });
    }
}

/// Frames through both codecs, fed to the decoder in random pieces.
#[test]
fn frames_round_trip_through_both_codecs_in_any_pieces() {
    let mut values = Values::new(SEED ^ 1);
    for _ in 0..cases() / 10 {
        // Client to server.
        let mut frames = vec![ClientFrame::Connect(values.connect_request())];
        for _ in 0..values.below(6) {
            frames.push(ClientFrame::Request(values.request_frame()));
        }
        let mut wire = BytesMut::new();
        let mut client = ClientCodec::new();
        for frame in &frames {
            client.encode(frame.clone(), &mut wire).unwrap();
        }
        let decoded = decode_in_pieces(&mut values, ServerCodec::new(), &wire);
        assert_eq!(decoded, frames);
        for frame in &decoded[1..] {
            let ClientFrame::Request(request) = frame else {
                panic!("{frame:?}")
            };
            assert_eq!(request.decode().unwrap().op_code(), request.header.op_code);
        }

        // Server to client.
        let mut frames = vec![ServerFrame::Connected(values.connect_response())];
        for _ in 0..values.below(6) {
            frames.push(ServerFrame::Reply(values.reply_frame()));
        }
        let mut wire = BytesMut::new();
        let mut server = ServerCodec::new();
        for frame in &frames {
            server.encode(frame.clone(), &mut wire).unwrap();
        }
        assert_eq!(
            decode_in_pieces(&mut values, ClientCodec::new(), &wire),
            frames
        );
    }
}

fn decode_in_pieces<D>(values: &mut Values, mut codec: D, wire: &[u8]) -> Vec<D::Item>
where
    D: Decoder<Error = CodecError>,
    D::Item: Debug,
{
    let mut decoded = Vec::new();
    let mut buffer = BytesMut::new();
    let mut rest = wire;
    while !rest.is_empty() {
        let piece = 1 + values.below(rest.len().min(40));
        buffer.extend_from_slice(&rest[..piece]);
        rest = &rest[piece..];
        while let Some(frame) = codec.decode(&mut buffer).unwrap() {
            decoded.push(frame);
        }
    }
    assert_eq!(codec.decode_eof(&mut buffer).unwrap().map(|_| ()), None);
    decoded
}

/// A frame's reply body that is cut short is refused with the frame's offsets.
#[test]
fn cut_reply_bodies_are_refused_with_offsets_in_the_frame() {
    let mut values = Values::new(SEED ^ 2);
    for _ in 0..cases() {
        let (request, response) = values.exchange();
        let op = request.op_code();
        let reply = curator_wire::ReplyFrame::ok(1, 2, &response);
        if reply.body.is_empty() {
            continue;
        }
        let cut = values.below(reply.body.len());
        let short = curator_wire::ReplyFrame {
            body: reply.body.slice(..cut),
            ..reply
        };
        let error = short.decode(op).expect_err("a cut body decoded");
        assert!(
            error.offset() >= 16 && error.offset() <= 16 + cut,
            "{op:?} cut at {cut}: {error}"
        );
    }
}
