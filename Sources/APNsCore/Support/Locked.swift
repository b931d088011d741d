#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a mutex, for the state this package shares between threads (the transport's
/// inbox, a bulk send's channel, the token cache, the mock server's state).
///
/// It is a `pthread_mutex_t` rather than `Synchronization.Mutex` on purpose: on Linux `Mutex` is
/// built on the futex system call, which ThreadSanitizer does not see, so every access under it was
/// reported as a data race (34 reports in the transport and bulk suites), burying any real one.
/// ThreadSanitizer intercepts pthread mutexes, so with this lock its reports mean something. An
/// uncontended lock and unlock costs the same as `Mutex`'s.
///
/// Thread safety: `withLock` may be called from any thread; the value is only reached inside it.
/// `@unchecked Sendable`: every access to `value` happens between `pthread_mutex_lock` and
/// `pthread_mutex_unlock` on `mutex`, which is allocated once and never moves.
package final class Locked<Value>: @unchecked Sendable {
    /// No dynamic exclusivity check: the mutex already makes every access exclusive (a nested
    /// `withLock` would deadlock before it could overlap), and the check cost about 80
    /// instructions per call on the send path.
    @exclusivity(unchecked) private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
