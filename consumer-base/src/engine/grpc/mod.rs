//! The gRPC fetch engine (the 5.x proxy).
