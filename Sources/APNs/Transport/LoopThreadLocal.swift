import Foundation

/// A thread-specific slot for one object of a transport loop thread, which libcurl's callbacks and
/// the code the loop runs reach without a reference to the loop (``DeferredWakes``,
/// ``CoalescedWrites``).
///
/// Thread safety: `Sendable`. The key is created once and only names a slot; each thread sees its
/// own value, which only that thread sets and reads.
struct LoopThreadLocal<Value: AnyObject>: Sendable {
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        self.key = key
    }

    /// The calling thread's object, if it installed one.
    var current: Value? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<Value>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Makes `value` the calling thread's object (unretained: the caller keeps it alive until it
    /// calls ``uninstall()``).
    func install(_ value: Value) {
        pthread_setspecific(key, Unmanaged.passUnretained(value).toOpaque())
    }

    /// The calling thread has no object any more.
    func uninstall() {
        pthread_setspecific(key, nil)
    }
}
