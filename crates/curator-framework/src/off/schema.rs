//! Without the `schema` feature: no schema set, so nothing is ever checked.

use crate::acl::Acl;
use crate::error::Result;
use crate::types::CreateMode;

/// Never made: a client without the feature has no schema set.
#[derive(Debug)]
pub(crate) enum SchemaSet {}

impl SchemaSet {
    pub(crate) fn check_create(&self, _: &str, _: CreateMode, _: &[u8]) -> Result<()> {
        match *self {}
    }

    pub(crate) fn check_acl(&self, _: &str, _: &[Acl]) -> Result<()> {
        match *self {}
    }

    pub(crate) fn check_parent(&self, _: &str, _: CreateMode, _: &[Acl]) -> Result<()> {
        match *self {}
    }

    pub(crate) fn check_set_data(&self, _: &str, _: &[u8]) -> Result<()> {
        match *self {}
    }

    pub(crate) fn check_delete(&self, _: &str) -> Result<()> {
        match *self {}
    }

    pub(crate) fn check_watch(&self, _: &str, _: bool) -> Result<()> {
        match *self {}
    }
}
