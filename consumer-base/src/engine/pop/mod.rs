//! The remoting pop fetch engine (RocketMQ 5.x brokers).
