import Foundation

/// An object a transport loop thread makes for itself, which libcurl's callbacks and the code the
/// loop runs reach through a thread-specific pointer, without a reference to the loop
/// (``DeferredWakes``, ``CoalescedWrites``).
///
/// The loop calls ``install()`` when its thread starts, keeps the object alive, and calls
/// ``uninstall()`` before the thread ends; anything on that thread in between finds it as
/// ``current``, anything on another thread finds nil.
protocol LoopThreadObject: AnyObject {
    /// The thread-specific slot of the conforming type: one `static let` each.
    static var slot: LoopThreadSlot { get }
    init()
    /// The loop thread stops using the object: finish what is pending.
    func finish()
}

extension LoopThreadObject {
    /// The calling thread's object, when it is a transport loop thread.
    static var current: Self? {
        guard let pointer = pthread_getspecific(slot.key) else { return nil }
        return Unmanaged<Self>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Makes one for the calling thread (the slot holds it unretained: the caller keeps it alive
    /// and calls ``uninstall()`` before it goes).
    static func install() -> Self {
        let object = Self()
        pthread_setspecific(slot.key, Unmanaged.passUnretained(object).toOpaque())
        return object
    }

    /// Finishes what is pending and leaves the calling thread without one.
    func uninstall() {
        finish()
        pthread_setspecific(Self.slot.key, nil)
    }
}

/// A thread-specific slot: each thread sees its own value, which only that thread sets and reads.
///
/// Thread safety: `Sendable`. The key is created once and only names the slot.
struct LoopThreadSlot: Sendable {
    let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        self.key = key
    }
}
