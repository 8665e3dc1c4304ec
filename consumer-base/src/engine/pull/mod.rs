//! The remoting pull fetch engine.
