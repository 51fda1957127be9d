//! [`Lifecycle`]: the one `Latent → Started → Closed` machine every recipe runs.

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// Where a recipe is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecipeState {
    /// Built, not started.
    Latent,
    /// Started, not closed.
    Started,
    /// Closed (for good: a recipe does not start again).
    Closed,
}

/// The one `Latent → Started → Closed` machine of every recipe.
///
/// ```
/// use curator_framework::Error;
/// use curator_framework::recipe::{Lifecycle, RecipeState};
/// let lifecycle = Lifecycle::new();
/// assert_eq!(lifecycle.ensure_started(), Err(Error::NotStarted));
/// lifecycle.start().unwrap();
/// assert_eq!(lifecycle.start(), Err(Error::AlreadyStarted));
/// assert!(lifecycle.close()); // the first close does the work
/// assert!(!lifecycle.close());
/// assert_eq!(lifecycle.state(), RecipeState::Closed);
/// assert_eq!(lifecycle.start(), Err(Error::Closed));
/// ```
#[derive(Debug)]
pub struct Lifecycle {
    state: Mutex<RecipeState>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self::new()
    }
}

impl Lifecycle {
    /// A lifecycle in [`RecipeState::Latent`].
    pub fn new() -> Self {
        Self {
            state: Mutex::new(RecipeState::Latent),
        }
    }

    /// `Latent → Started`.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed.
    pub fn start(&self) -> Result<()> {
        let mut state = self.state.lock();
        match *state {
            RecipeState::Latent => {
                *state = RecipeState::Started;
                Ok(())
            }
            RecipeState::Started => Err(Error::AlreadyStarted),
            RecipeState::Closed => Err(Error::Closed),
        }
    }

    /// `Ok` when [`start`](Self::start) would succeed now: for recipes whose start does its
    /// I/O first and calls `start()` only once that succeeded (so a failed start can be tried
    /// again).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn ensure_startable(&self) -> Result<()> {
        match self.state() {
            RecipeState::Latent => Ok(()),
            RecipeState::Started => Err(Error::AlreadyStarted),
            RecipeState::Closed => Err(Error::Closed),
        }
    }

    /// `→ Closed`; `true` the first time (whether or not it was started), so the caller does
    /// its cleanup once.
    pub fn close(&self) -> bool {
        std::mem::replace(&mut *self.state.lock(), RecipeState::Closed) != RecipeState::Closed
    }

    /// The current state.
    pub fn state(&self) -> RecipeState {
        *self.state.lock()
    }

    /// Whether started and not closed.
    pub fn is_started(&self) -> bool {
        self.state() == RecipeState::Started
    }

    /// `Ok` when started and not closed.
    ///
    /// # Errors
    /// [`Error::NotStarted`] before `start()`, [`Error::Closed`] after `close()`.
    pub fn ensure_started(&self) -> Result<()> {
        match self.state() {
            RecipeState::Started => Ok(()),
            RecipeState::Latent => Err(Error::NotStarted),
            RecipeState::Closed => Err(Error::Closed),
        }
    }
}
