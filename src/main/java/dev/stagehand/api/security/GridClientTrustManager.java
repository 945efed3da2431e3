package dev.stagehand.api.security;

import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The TLS server's trust manager for client certificates: it lets every client chain through the handshake
 * (which still proves the client holds the leaf's private key) so that grid proxies, which the JDK's PKIX
 * trust manager rejects (an end-entity certificate signing a proxy), reach the API. The chain is then
 * validated by {@link ProxyChainValidator} in the API's filter chain, which refuses with a clear 401 instead
 * of a TLS alert. Tomcat instantiates it by class name (no-argument constructor).
 */
public final class GridClientTrustManager extends X509ExtendedTrustManager {

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) {
        // validated by ProxyChainValidator in the API filter chain
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {
        // as above
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        // as above
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        throw new CertificateException("server-side trust manager only");
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        throw new CertificateException("server-side trust manager only");
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        throw new CertificateException("server-side trust manager only");
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
        return new X509Certificate[0]; // no CA list in the CertificateRequest: clients offer what they have
    }
}
