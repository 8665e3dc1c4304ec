//! Queue selectors for [`Producer::send_with_selector`](crate::Producer::send_with_selector):
//! ordered sends put every message with one key into one queue.

use rmq_protocol::{Message, MessageQueue};

/// A value with Java's `hashCode()`, so a Rust producer picks the same queue
/// as a Java producer using `SelectMessageQueueByHash` with the same key.
pub trait JavaHashCode {
    /// The value's Java `hashCode()`.
    fn java_hash_code(&self) -> i32;
}

impl JavaHashCode for str {
    /// Java `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16
    /// code units, wrapping.
    fn java_hash_code(&self) -> i32 {
        self.encode_utf16()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
    }
}

impl JavaHashCode for String {
    fn java_hash_code(&self) -> i32 {
        self.as_str().java_hash_code()
    }
}

impl JavaHashCode for i32 {
    /// Java `Integer.hashCode`: the value.
    fn java_hash_code(&self) -> i32 {
        *self
    }
}

impl JavaHashCode for i64 {
    /// Java `Long.hashCode`: `(int) (v ^ (v >>> 32))`.
    fn java_hash_code(&self) -> i32 {
        let v = u64::from_be_bytes(self.to_be_bytes());
        let [_, _, _, _, a, b, c, d] = (v ^ (v >> 32)).to_be_bytes();
        i32::from_be_bytes([a, b, c, d])
    }
}

impl<T: JavaHashCode + ?Sized> JavaHashCode for &T {
    fn java_hash_code(&self) -> i32 {
        (**self).java_hash_code()
    }
}

/// The index Java's `SelectMessageQueueByHash` picks for `key` among `len`
/// queues: `abs(key.hashCode() % len)`. `len` must be non-zero (0 gives 0).
pub fn hash_index<K: JavaHashCode + ?Sized>(key: &K, len: usize) -> usize {
    let Ok(len) = i32::try_from(len) else {
        // More queues than an i32 holds: not a real topic.
        return 0;
    };
    if len == 0 {
        return 0;
    }
    // |h % len| < len, so neither the remainder nor abs can overflow.
    usize::try_from((key.java_hash_code() % len).unsigned_abs()).unwrap_or(0)
}

/// A selector choosing the queue by the Java hash of `key` (Java
/// `SelectMessageQueueByHash`): messages with the same key go to the same
/// queue, in send order, as long as the topic's queues do not change.
///
/// ```
/// use rmq_producer::select_by_hash;
/// # use rmq_producer::{MessageQueue, Message};
/// let select = select_by_hash("order-42");
/// let queues: Vec<MessageQueue> = (0..4).map(|i| MessageQueue::new("t", "b", i)).collect();
/// let index = select(&queues, &Message::new("t", "x"));
/// assert!(index < 4);
/// ```
pub fn select_by_hash<K>(
    key: K,
) -> impl Fn(&[MessageQueue], &Message) -> usize + Send + Sync + Clone
where
    K: JavaHashCode + Send + Sync + Clone,
{
    move |queues: &[MessageQueue], _msg: &Message| hash_index(&key, queues.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_string_hash() {
        // Values from Java's "...".hashCode().
        assert_eq!("".java_hash_code(), 0);
        assert_eq!("a".java_hash_code(), 97);
        assert_eq!("hello".java_hash_code(), 99_162_322);
        assert_eq!("123".java_hash_code(), 48_690);
        assert_eq!("polygenelubricants".java_hash_code(), i32::MIN);
        // Supplementary character: two UTF-16 units (0xD83D, 0xDE00).
        assert_eq!("😀".java_hash_code(), 0xD83D * 31 + 0xDE00);
        assert_eq!(String::from("a").java_hash_code(), 97);
        assert_eq!((&"a").java_hash_code(), 97);
    }

    #[test]
    fn java_number_hash() {
        assert_eq!(7i32.java_hash_code(), 7);
        assert_eq!((-1i64).java_hash_code(), 0);
        assert_eq!((1i64 << 32).java_hash_code(), 1);
        assert_eq!(5i64.java_hash_code(), 5);
    }

    #[test]
    fn index_like_java() {
        // "hello" % 3 == 1.
        assert_eq!(hash_index("hello", 3), 99_162_322 % 3);
        // Negative hash: abs of the remainder.
        let neg = "polygenelubricants"; // i32::MIN
        assert_eq!(
            hash_index(neg, 7),
            usize::try_from((i32::MIN % 7).unsigned_abs()).unwrap()
        );
        assert_eq!(hash_index(&-9i32, 4), 1);
        assert_eq!(hash_index("x", 0), 0);
        let queues: Vec<_> = (0..4).map(|i| MessageQueue::new("t", "b", i)).collect();
        let select = select_by_hash(String::from("123"));
        assert_eq!(select(&queues, &Message::new("t", "x")), 48_690 % 4);
    }
}
