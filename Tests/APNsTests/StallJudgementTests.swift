@testable import APNs
import Foundation
import Testing

/// What the stall check reads before it shuts a connection down: bytes the server sent that this
/// process has not read yet mean the connection is alive and the loop is behind (a busy machine).
@Suite struct StallJudgementTests {
    @Test func unreadBytesOnASocketAreCounted() throws {
        var pair: [Int32] = [0, 0]
        #if os(Linux)
            let stream = Int32(SOCK_STREAM.rawValue)
        #else
            let stream = SOCK_STREAM
        #endif
        try #require(socketpair(AF_UNIX, stream, 0, &pair) == 0)
        defer {
            close(pair[0])
            close(pair[1])
        }
        let loop = try LoopThreadTests.loop()
        #expect(loop.unreadBytes(on: pair[0]) == 0)
        let bytes: [UInt8] = Array("HTTP/2 frames".utf8)
        #expect(write(pair[1], bytes, bytes.count) == bytes.count)
        #expect(loop.unreadBytes(on: pair[0]) == Int32(bytes.count))
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(read(pair[0], &buffer, buffer.count) == bytes.count)
        #expect(loop.unreadBytes(on: pair[0]) == 0)
        #expect(loop.unreadBytes(on: -1) == 0)  // not a socket: cannot tell, so no evidence of life
    }
}
