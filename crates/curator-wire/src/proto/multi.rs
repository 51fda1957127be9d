//! multi (a transaction of writes) and multiRead (reads seen at one point), with their results.
//!
//! Both are a sequence of steps, each led by a `MultiHeader` (type, done, err), and closed by a
//! header with `done` set (type -1, err -1). A request's headers carry err -1; a result's
//! carry 0, or the step's error code for an error result (type -1), whose body is the code
//! again (an `ErrorResponse`).

use bytes::{BufMut, BytesMut};

use super::{
    CheckVersionRequest, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest,
    DeleteRequest, ErrorCode, ErrorResponse, GetChildrenRequest, GetChildrenResponse,
    GetDataRequest, GetDataResponse, OpCode, SetDataRequest, Stat,
};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::jute::{Jute, Reader, impl_record, put_bool};

/// One step of a [`MultiRequest`]. Create steps are create, create2 or createContainer by
/// variant; the server applies all steps or none.
///
/// ```
/// use curator_wire::proto::{CheckVersionRequest, MultiOp, OpCode};
///
/// let step = MultiOp::Check(CheckVersionRequest { path: "/a".into(), version: 2 });
/// assert_eq!(step.op_code(), OpCode::Check);
/// ```
// Not `#[non_exhaustive]`: the protocol's surface is fixed, and a session engine or a server
// model should fail to compile, not fall through, if it ever grows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// A create whose result is the path only.
    Create(CreateRequest),
    /// A create whose result has the stat too (3.8.2+ servers; older ones answer with the path
    /// only, as for [`Create`](MultiOp::Create)).
    Create2(CreateRequest),
    /// A container create.
    CreateContainer(CreateRequest),
    /// A create with a TTL.
    CreateTtl(CreateTtlRequest),
    /// A delete.
    Delete(DeleteRequest),
    /// A setData.
    SetData(SetDataRequest),
    /// A version check.
    Check(CheckVersionRequest),
}

impl MultiOp {
    /// The step's opcode (in its header).
    ///
    /// ```
    /// use curator_wire::proto::{CreateRequest, MultiOp, OpCode};
    ///
    /// assert_eq!(MultiOp::Create2(CreateRequest::default()).op_code(), OpCode::Create2);
    /// ```
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOp::Create(_) => OpCode::Create,
            MultiOp::Create2(_) => OpCode::Create2,
            MultiOp::CreateContainer(_) => OpCode::CreateContainer,
            MultiOp::CreateTtl(_) => OpCode::CreateTtl,
            MultiOp::Delete(_) => OpCode::Delete,
            MultiOp::SetData(_) => OpCode::SetData,
            MultiOp::Check(_) => OpCode::Check,
        }
    }

    fn write_body(&self, buf: &mut BytesMut) {
        match self {
            MultiOp::Create(request)
            | MultiOp::Create2(request)
            | MultiOp::CreateContainer(request) => request.write(buf),
            MultiOp::CreateTtl(request) => request.write(buf),
            MultiOp::Delete(request) => request.write(buf),
            MultiOp::SetData(request) => request.write(buf),
            MultiOp::Check(request) => request.write(buf),
        }
    }
}

/// The body of multi: a transaction.
///
/// ```
/// use curator_wire::proto::{DeleteRequest, MultiOp, MultiRequest, Record};
///
/// let request = MultiRequest {
///     ops: vec![MultiOp::Delete(DeleteRequest { path: "/a".into(), version: -1 })],
/// };
/// assert_eq!(MultiRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiRequest {
    /// The steps, in order.
    pub ops: Vec<MultiOp>,
}

impl Jute for MultiRequest {
    const MIN_LEN: usize = MultiHeader::LEN;

    fn write(&self, buf: &mut BytesMut) {
        for op in &self.ops {
            MultiHeader::step(op.op_code().code(), -1).write(buf);
            op.write_body(buf);
        }
        MultiHeader::DONE.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("MultiRequest", |r| {
            let mut ops = Vec::new();
            while let Some(op) = MultiHeader::read_step(r)? {
                ops.push(match op {
                    OpCode::Create => MultiOp::Create(CreateRequest::read(r)?),
                    OpCode::Create2 => MultiOp::Create2(CreateRequest::read(r)?),
                    OpCode::CreateContainer => MultiOp::CreateContainer(CreateRequest::read(r)?),
                    OpCode::CreateTtl => MultiOp::CreateTtl(CreateTtlRequest::read(r)?),
                    OpCode::Delete => MultiOp::Delete(DeleteRequest::read(r)?),
                    OpCode::SetData => MultiOp::SetData(SetDataRequest::read(r)?),
                    OpCode::Check => MultiOp::Check(CheckVersionRequest::read(r)?),
                    op => return Err(MultiHeader::unexpected(r, op)),
                });
            }
            Ok(MultiRequest { ops })
        })
    }
}

/// The result of one step of a multi.
///
/// When a multi fails, every step has an [`Error`](MultiResult::Error) result: the failed step
/// its error, the steps before it [`ErrorCode::Ok`], the steps after it
/// [`ErrorCode::RuntimeInconsistency`].
///
/// ```
/// use curator_wire::proto::{ErrorCode, MultiResult};
///
/// let failed = MultiResult::Error(ErrorCode::BadVersion);
/// assert_ne!(failed, MultiResult::Check);
/// ```
// Not `#[non_exhaustive]`: the protocol's surface is fixed, and a session engine or a server
// model should fail to compile, not fall through, if it ever grows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// A create step's result without a stat (create steps; create2 steps on servers before
    /// 3.8.2).
    Create(CreateResponse),
    /// A create step's result with the new node's stat (create2, createContainer and createTTL
    /// steps on 3.8.2+ servers).
    Create2(Create2Response),
    /// A delete step succeeded.
    Delete,
    /// A setData step's result: the node's new stat.
    SetData(Stat),
    /// A check step succeeded.
    Check,
    /// The step's error (see the type's docs).
    Error(ErrorCode),
}

impl MultiResult {
    fn write(&self, buf: &mut BytesMut) {
        match self {
            MultiResult::Create(response) => {
                MultiHeader::step(OpCode::Create.code(), 0).write(buf);
                response.write(buf);
            }
            MultiResult::Create2(response) => {
                MultiHeader::step(OpCode::Create2.code(), 0).write(buf);
                response.write(buf);
            }
            MultiResult::Delete => MultiHeader::step(OpCode::Delete.code(), 0).write(buf),
            MultiResult::SetData(stat) => {
                MultiHeader::step(OpCode::SetData.code(), 0).write(buf);
                stat.write(buf);
            }
            MultiResult::Check => MultiHeader::step(OpCode::Check.code(), 0).write(buf),
            MultiResult::Error(err) => {
                MultiHeader::step(OpCode::Error.code(), err.code()).write(buf);
                ErrorResponse { err: *err }.write(buf);
            }
        }
    }
}

/// The reply to multi: one result per step, in order.
///
/// ```
/// use curator_wire::proto::{MultiResponse, MultiResult, Record, Stat};
///
/// let response = MultiResponse { results: vec![MultiResult::SetData(Stat::default())] };
/// assert_eq!(MultiResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiResponse {
    /// The results.
    pub results: Vec<MultiResult>,
}

impl Jute for MultiResponse {
    const MIN_LEN: usize = MultiHeader::LEN;

    fn write(&self, buf: &mut BytesMut) {
        for result in &self.results {
            result.write(buf);
        }
        MultiHeader::DONE.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("MultiResponse", |r| {
            let mut results = Vec::new();
            while let Some(op) = MultiHeader::read_step(r)? {
                results.push(match op {
                    OpCode::Create => MultiResult::Create(CreateResponse::read(r)?),
                    OpCode::Create2 => MultiResult::Create2(Create2Response::read(r)?),
                    OpCode::Delete => MultiResult::Delete,
                    OpCode::SetData => MultiResult::SetData(Stat::read(r)?),
                    OpCode::Check => MultiResult::Check,
                    OpCode::Error => MultiResult::Error(ErrorResponse::read(r)?.err),
                    op => return Err(MultiHeader::unexpected(r, op)),
                });
            }
            Ok(MultiResponse { results })
        })
    }
}

/// One step of a [`MultiReadRequest`].
///
/// ```
/// use curator_wire::proto::{GetDataRequest, MultiReadOp, OpCode};
///
/// let step = MultiReadOp::GetData(GetDataRequest { path: "/a".into(), watch: false });
/// assert_eq!(step.op_code(), OpCode::GetData);
/// ```
// Not `#[non_exhaustive]`: the protocol's surface is fixed, and a session engine or a server
// model should fail to compile, not fall through, if it ever grows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiReadOp {
    /// Read a node's data (the Java client sends `watch` false).
    GetData(GetDataRequest),
    /// List a node's children (the Java client sends `watch` false).
    GetChildren(GetChildrenRequest),
}

impl MultiReadOp {
    /// The step's opcode (in its header).
    ///
    /// ```
    /// use curator_wire::proto::{GetChildrenRequest, MultiReadOp, OpCode};
    ///
    /// let step = MultiReadOp::GetChildren(GetChildrenRequest::default());
    /// assert_eq!(step.op_code(), OpCode::GetChildren);
    /// ```
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiReadOp::GetData(_) => OpCode::GetData,
            MultiReadOp::GetChildren(_) => OpCode::GetChildren,
        }
    }
}

/// The body of multiRead.
///
/// ```
/// use curator_wire::proto::{GetChildrenRequest, MultiReadOp, MultiReadRequest, Record};
///
/// let request = MultiReadRequest {
///     ops: vec![MultiReadOp::GetChildren(GetChildrenRequest { path: "/".into(), watch: false })],
/// };
/// assert_eq!(MultiReadRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiReadRequest {
    /// The reads, in order.
    pub ops: Vec<MultiReadOp>,
}

impl Jute for MultiReadRequest {
    const MIN_LEN: usize = MultiHeader::LEN;

    fn write(&self, buf: &mut BytesMut) {
        for op in &self.ops {
            MultiHeader::step(op.op_code().code(), -1).write(buf);
            match op {
                MultiReadOp::GetData(request) => request.write(buf),
                MultiReadOp::GetChildren(request) => request.write(buf),
            }
        }
        MultiHeader::DONE.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("MultiReadRequest", |r| {
            let mut ops = Vec::new();
            while let Some(op) = MultiHeader::read_step(r)? {
                ops.push(match op {
                    OpCode::GetData => MultiReadOp::GetData(GetDataRequest::read(r)?),
                    OpCode::GetChildren => MultiReadOp::GetChildren(GetChildrenRequest::read(r)?),
                    op => return Err(MultiHeader::unexpected(r, op)),
                });
            }
            Ok(MultiReadRequest { ops })
        })
    }
}

/// The result of one read of a multiRead: each read succeeds or fails on its own.
///
/// ```
/// use curator_wire::proto::{ErrorCode, MultiReadResult};
///
/// let missing = MultiReadResult::Error(ErrorCode::NoNode);
/// assert!(matches!(missing, MultiReadResult::Error(ErrorCode::NoNode)));
/// ```
// Not `#[non_exhaustive]`: the protocol's surface is fixed, and a session engine or a server
// model should fail to compile, not fall through, if it ever grows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiReadResult {
    /// A node's data and stat.
    GetData(GetDataResponse),
    /// A node's children.
    GetChildren(GetChildrenResponse),
    /// The read failed.
    Error(ErrorCode),
}

/// The reply to multiRead: one result per read, in order.
///
/// ```
/// use curator_wire::proto::{ErrorCode, MultiReadResponse, MultiReadResult, Record};
///
/// let response = MultiReadResponse { results: vec![MultiReadResult::Error(ErrorCode::NoNode)] };
/// assert_eq!(MultiReadResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiReadResponse {
    /// The results.
    pub results: Vec<MultiReadResult>,
}

impl Jute for MultiReadResponse {
    const MIN_LEN: usize = MultiHeader::LEN;

    fn write(&self, buf: &mut BytesMut) {
        for result in &self.results {
            match result {
                MultiReadResult::GetData(response) => {
                    MultiHeader::step(OpCode::GetData.code(), 0).write(buf);
                    response.write(buf);
                }
                MultiReadResult::GetChildren(response) => {
                    MultiHeader::step(OpCode::GetChildren.code(), 0).write(buf);
                    response.write(buf);
                }
                MultiReadResult::Error(err) => {
                    MultiHeader::step(OpCode::Error.code(), err.code()).write(buf);
                    ErrorResponse { err: *err }.write(buf);
                }
            }
        }
        MultiHeader::DONE.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("MultiReadResponse", |r| {
            let mut results = Vec::new();
            while let Some(op) = MultiHeader::read_step(r)? {
                results.push(match op {
                    OpCode::GetData => MultiReadResult::GetData(GetDataResponse::read(r)?),
                    OpCode::GetChildren => {
                        MultiReadResult::GetChildren(GetChildrenResponse::read(r)?)
                    }
                    OpCode::Error => MultiReadResult::Error(ErrorResponse::read(r)?.err),
                    op => return Err(MultiHeader::unexpected(r, op)),
                });
            }
            Ok(MultiReadResponse { results })
        })
    }
}

/// The header before each step, and the closing one.
struct MultiHeader {
    op: i32,
    done: bool,
    err: i32,
}

impl MultiHeader {
    const LEN: usize = 9;

    const DONE: MultiHeader = MultiHeader {
        op: -1,
        done: true,
        err: -1,
    };

    fn step(op: i32, err: i32) -> Self {
        Self {
            op,
            done: false,
            err,
        }
    }

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.op);
        put_bool(buf, self.done);
        buf.put_i32(self.err);
    }

    /// Reads a header: the opcode of the step it leads, or `None` for the closing header.
    /// Like the Java code, it reads neither the closing header's type nor any header's err
    /// (an error step's code is in its body).
    fn read_step(reader: &mut Reader<'_>) -> Result<Option<OpCode>, DecodeError> {
        reader.record("MultiHeader", |r| {
            let at = r.position();
            let code = r.i32("type")?;
            let done = r.bool("done")?;
            r.i32("err")?;
            if done {
                return Ok(None);
            }
            OpCode::from_code(code)
                .map(Some)
                .ok_or_else(|| r.error_at("type", at, DecodeErrorKind::UnknownOpCode { code }))
        })
    }

    /// The error for a step of the wrong kind; the reader is just past the step's header.
    fn unexpected(reader: &Reader<'_>, op: OpCode) -> DecodeError {
        let at = reader.position() - Self::LEN;
        reader.error_at("type", at, DecodeErrorKind::UnexpectedOpCode { op })
    }
}

impl_record!(
    MultiRequest,
    MultiResponse,
    MultiReadRequest,
    MultiReadResponse
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Record;

    #[test]
    fn the_layout_is_javas() {
        let request = MultiRequest {
            ops: vec![MultiOp::Check(CheckVersionRequest {
                path: "/a".into(),
                version: 1,
            })],
        };
        let expected: Vec<u8> = [
            &13i32.to_be_bytes()[..], // type: check
            &[0],                     // done: false
            &(-1i32).to_be_bytes(),   // err: -1
            &2i32.to_be_bytes(),      // path
            b"/a",
            &1i32.to_be_bytes(),    // version
            &(-1i32).to_be_bytes(), // closing: type -1
            &[1],                   // done: true
            &(-1i32).to_be_bytes(), // err -1
        ]
        .concat();
        assert_eq!(&request.to_bytes()[..], &expected[..]);

        let failed = MultiResponse {
            results: vec![MultiResult::Error(ErrorCode::NoNode)],
        };
        let expected: Vec<u8> = [
            &(-1i32).to_be_bytes()[..],
            &[0],
            &(-101i32).to_be_bytes(),
            &(-101i32).to_be_bytes(),
            &(-1i32).to_be_bytes(),
            &[1],
            &(-1i32).to_be_bytes(),
        ]
        .concat();
        assert_eq!(&failed.to_bytes()[..], &expected[..]);
    }

    #[test]
    fn a_read_inside_a_multi_is_refused_where_it_stands() {
        let mut bytes = BytesMut::new();
        MultiHeader::step(OpCode::Check.code(), -1).write(&mut bytes);
        CheckVersionRequest::default().write(&mut bytes);
        let step = bytes.len();
        MultiHeader::step(OpCode::GetData.code(), -1).write(&mut bytes);
        GetDataRequest::default().write(&mut bytes);
        MultiHeader::DONE.write(&mut bytes);
        let error = MultiRequest::decode(&bytes).unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::UnexpectedOpCode {
                op: OpCode::GetData
            }
        );
        assert_eq!(error.offset(), step);
        assert_eq!(error.record(), "MultiRequest");
    }

    #[test]
    fn a_multi_without_its_closing_header_is_truncated() {
        let request = MultiRequest {
            ops: vec![MultiOp::Delete(DeleteRequest::default())],
        };
        let bytes = request.to_bytes();
        let error = MultiRequest::decode(&bytes[..bytes.len() - MultiHeader::LEN]).unwrap_err();
        assert_eq!(error.record(), "MultiHeader");
        assert!(matches!(error.kind(), DecodeErrorKind::Truncated { .. }));
    }

    #[test]
    fn an_unknown_step_type_is_refused() {
        let mut bytes = BytesMut::new();
        MultiHeader::step(77, 0).write(&mut bytes);
        MultiHeader::DONE.write(&mut bytes);
        let error = MultiResponse::decode(&bytes).unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::UnknownOpCode { code: 77 });
        assert_eq!(error.offset(), 0);
    }
}
