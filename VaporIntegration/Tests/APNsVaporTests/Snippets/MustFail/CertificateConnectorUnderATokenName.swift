// expect: requires the types 'TokenAuthentication' and 'CertificateConnector.Authentication'
import APNs
import APNsVapor
import Vapor

func configure(_ app: Application, connector: CertificateConnector) throws {
    try app.apns.use(connector, as: APNsConnectorID<TokenAuthentication>("shop"))
}
