import APNs
import ArgumentParser
import Foundation

/// The one place where errors become a message on standard error and an exit code.
///
/// | exit | meaning |
/// |---|---|
/// | 0 | everything was accepted |
/// | 1 | APNs rejected at least one notification |
/// | 2 | bad input: usage, validation, unreadable files |
/// | 3 | a credential could not be used |
/// | 4 | transport failure: nothing came back |
/// | 5 | anything else (the mock server failed, …) |
enum Failure {
    static let rejected = ExitCode(1)

    /// The table above, as `apns --help` and `apns send --help` print it.
    static let exitCodes = """
        Exit codes:
          0  everything was accepted
          1  APNs rejected at least one notification
          2  bad input: usage, validation, unreadable files
          3  a credential could not be used
          4  transport failure: nothing came back
          5  anything else (the mock server failed, …)
        """

    /// Runs `body`, reporting any error in the one format this command uses.
    static func reporting(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            let (message, code) = describe(error)
            FileHandle.standardError.write(Data("apns: \(message)\n".utf8))
            throw code
        }
    }

    static func describe(_ error: any Error) -> (String, ExitCode) {
        switch error {
        case let error as APNsError:
            switch error {
            case .validation(let error): return describe(error)
            case .credential(let error): return describe(error)
            case .rejected(let error): return describe(error)
            case .transport(let error): return describe(error)
            case .bulkResultsAlreadyIterated: return (error.description, ExitCode(5))
            }
        case let error as APNsValidationError: return (error.description, ExitCode(2))
        case let error as UsageError: return (error.message, ExitCode(2))
        case let error as CredentialError: return (error.description, ExitCode(3))
        case let error as APNsRejection where error.reason == .tooManyProviderTokenUpdates:
            // Every `apns send` is a new process with a new token for the key: the second run within
            // 20 minutes meets APNs' (and the mock's) limit.
            return (
                error.description
                    + " Each `apns send` makes a new token for the key: against `apns mock-server`, start it "
                    + "with --allow-frequent-token-updates; against APNs, wait 20 minutes between runs with the same key, "
                    + "or send many tokens in one run (--tokens-file).", ExitCode(1)
            )
        case let error as APNsRejection: return (error.description, ExitCode(1))
        case let error as TransportError: return (error.description, ExitCode(4))
        default: return (String(describing: error), ExitCode(5))
        }
    }
}

/// A command line that cannot work, with what to change.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
