// Keys and certificates come from files a person copied around: any bytes must give a usable
// credential or a CredentialError, never a crash or a leak.
@testable import APNs
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCredentials(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let mode = input.byte() % 6
    let passphrase = input.byte() & 1 == 1 ? input.string(limit: 12) : nil
    let payload = input.rest()
    switch mode {
    case 0:
        _ = try? ES256Signer(pem: payload)
    case 1:
        _ = try? ClientIdentity(certificatePEM: payload, privateKeyPEM: payload, passphrase: passphrase)
    case 2:
        _ = try? ClientIdentity(pkcs12: payload, password: passphrase ?? "")
    case 3:
        // A DER certificate: its dates, names and Apple extensions are read by hand.
        _ = try? CertificateDetails(certificate: .bytes(payload))
    case 4:
        // Apple's topic list: decoding any bytes throws or gives topics that encode and decode
        // back to themselves.
        if let topics = try? PushCertificate.topics(fromExtensionValue: payload) {
            let again = try? PushCertificate.topics(fromExtensionValue: PushCertificate.extensionValue(for: topics))
            if again != topics { fatalError("the topic list does not round-trip: \(topics)") }
        }
    default:
        // A PEM wrapper around the bytes, so the fuzzer reaches the DER parsers quickly.
        let pem =
            "-----BEGIN PRIVATE KEY-----\n" + Data(payload).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END PRIVATE KEY-----\n"
        _ = try? ES256Signer(pem: Array(pem.utf8))
    }
    return 0
}
