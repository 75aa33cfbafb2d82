//! Identity tags: class mirrors and Thread objects carry a tag that says
//! what they are (`tables::ids`), set when the agent first meets them. Two
//! things must follow such a tag:
//!
//! * an object the allocation profile had already counted under an object
//!   tag (slot) loses that tag: the slot is remembered under the identity
//!   tag, so the object's ObjectFree still reaches it;
//! * a heap dump walking in an environment of its own (`ScratchEnv`) must
//!   see classes registered while it runs: the tag is set there too.

use super::Context;
use crate::jvmti::{Jvmti, Obj};
use crate::tables::ids::{split_tag, TagKind};
use dashmap::DashMap;
use parking_lot::RwLock;

#[derive(Default)]
pub struct Tags {
    /// Identity tag -> object-table slot of the object's allocation.
    retagged: DashMap<i64, u32>,
    /// The scratch environment of the heap dump in progress.
    scratch: RwLock<Option<Jvmti>>,
}

impl Tags {
    /// Give `obj` the identity tag `tag` (and the running dump's
    /// environment too), remembering the slot it was counted in.
    pub fn set_identity(&self, ctx: &Context, obj: Obj<'_>, tag: i64) -> crate::jvmti::JResult<()> {
        let old = ctx.jvmti.get_tag(obj).unwrap_or(0);
        self.set_identity_over(ctx, obj, old, tag)
    }

    /// [`Tags::set_identity`] where the caller has just read `obj`'s tag
    /// (`old`) under a lock that keeps others from tagging it meanwhile.
    pub fn set_identity_over(
        &self,
        ctx: &Context,
        obj: Obj<'_>,
        old: i64,
        tag: i64,
    ) -> crate::jvmti::JResult<()> {
        ctx.jvmti.set_tag(obj, tag)?;
        if let Some((TagKind::Object, slot)) = split_tag(old) {
            self.retagged.insert(tag, slot as u32);
        }
        if let Some(env) = *self.scratch.read() {
            let _ = env.set_tag(obj, tag);
        }
        Ok(())
    }

    /// The allocation slot of an object now carrying identity tag `tag`,
    /// forgotten (its ObjectFree).
    pub fn take_slot(&self, tag: i64) -> Option<u32> {
        self.retagged.remove(&tag).map(|(_, slot)| slot)
    }

    /// The identity tag that replaced object tag `slot` (a class mirror
    /// or Thread object registered after its allocation was counted).
    /// Walks the map: for rare look-ups only.
    pub fn identity_of_slot(&self, slot: u32) -> Option<i64> {
        self.retagged
            .iter()
            .find(|e| *e.value() == slot)
            .map(|e| *e.key())
    }

    /// The allocation slot of an object carrying identity tag `tag`.
    pub fn slot(&self, tag: i64) -> Option<u32> {
        self.retagged.get(&tag).map(|s| *s)
    }

    /// Make `env` the environment that also gets identity tags set from
    /// now on, for as long as the returned guard lives (one heap dump).
    pub fn share_with(&self, env: Jvmti) -> SharedTags<'_> {
        *self.scratch.write() = Some(env);
        SharedTags(self)
    }
}

/// While alive, identity tags are set in a second environment too.
pub struct SharedTags<'a>(&'a Tags);

impl Drop for SharedTags<'_> {
    fn drop(&mut self) {
        *self.0.scratch.write() = None;
    }
}
