package dev.stagehand.api.security;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.GeneralSecurityException;
import java.security.cert.CertPathValidator;
import java.security.cert.CertStore;
import java.security.cert.CollectionCertStoreParameters;
import java.security.cert.PKIXRevocationChecker;
import java.security.cert.X509CRL;
import java.util.EnumSet;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.asn1.ASN1Encodable;
import org.bouncycastle.asn1.ASN1Integer;
import org.bouncycastle.asn1.ASN1ObjectIdentifier;
import org.bouncycastle.asn1.ASN1OctetString;
import org.bouncycastle.asn1.ASN1Primitive;
import org.bouncycastle.asn1.ASN1Sequence;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Validates a client's certificate chain the grid way: leading proxy certificates (RFC 3820, the pre-RFC
 * draft, and legacy Globus {@code CN=proxy}/{@code CN=limited proxy}) are checked one by one — each signed
 * by the certificate after it, in its validity period, named after its issuer plus one CN, no CA rights, path
 * length respected, policy inheritAll or limited — and the end-entity certificate with the rest of the chain
 * goes through the JDK's PKIX validation against the CA certificates of the trust directory. The identity
 * is the end-entity certificate's subject, in the OpenSSL slash form grid-mapfiles use.
 * <p>Revocation: the CRLs of the trust directory ({@code <hash>.r0}, as fetch-crl keeps them) are checked by
 * the same PKIX validation, per {@link CrlMode}; no network (no OCSP, no distribution points).
 * <p>Namespaces: each certificate of the path must have a subject its issuing CA's
 * {@code <hash>.signing_policy} allows ({@link SigningPolicies}), per {@link NamespaceMode}.
 */
public final class ProxyChainValidator {

    private static final Logger log = LoggerFactory.getLogger(ProxyChainValidator.class);
    static final String PROXY_CERT_INFO = "1.3.6.1.5.5.7.1.14";
    static final String PROXY_CERT_INFO_DRAFT = "1.3.6.1.4.1.3536.1.222";
    static final String INHERIT_ALL = "1.3.6.1.5.5.7.21.1";
    static final String LIMITED = "1.3.6.1.4.1.3536.1.1.1.9";
    private static final Set<String> PROXY_CRITICAL_OK = Set.of(PROXY_CERT_INFO, PROXY_CERT_INFO_DRAFT, "2.5.29.15", "2.5.29.19");
    /** OpenSSL's names for attribute types the JDK prints as OIDs. */
    private static final Map<String, String> OPENSSL_NAMES = Map.of(
            "1.2.840.113549.1.9.1", "emailAddress", "2.5.4.5", "serialNumber", "2.5.4.12", "title",
            "2.5.4.42", "GN", "2.5.4.4", "SN", "0.9.2342.19200300.100.1.1", "UID");
    private static final Pattern ANCHOR_FILE = Pattern.compile(".*\\.(\\d|pem|crt)$");
    private static final Pattern CRL_FILE = Pattern.compile(".*\\.r\\d+$");
    /** The trust directory is read again at least this often (fetch-crl may rewrite a CRL in place). */
    private static final long RELOAD_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(5);

    /**
     * How CRLs count, as dCache's {@code crl-mode}: REQUIRE a valid CRL for every CA of the chain; check one
     * IF_VALID (a CA without a current CRL is accepted; the default); IGNORE them.
     */
    public enum CrlMode { REQUIRE, IF_VALID, IGNORE }

    /**
     * How signing policies count, as dCache's {@code namespace-mode}: REQUIRE one for every CA of the chain;
     * apply one IF_PRESENT (a CA without one may sign any name; the default); IGNORE them.
     */
    public enum NamespaceMode { REQUIRE, IF_PRESENT, IGNORE }

    /** What the trust directory held when last read. */
    private record Trust(Set<TrustAnchor> anchors, CertStore crls, int crlCount, SigningPolicies policies,
                         FileTime modified, long readAt) {}

    /** What a valid chain proves: the end-entity DN, how many proxies led to it, whether one was limited. */
    public record Identity(String dn, int proxies, boolean limited) {}

    private final Path trustDir;
    private final boolean acceptLimited;
    private final CrlMode crlMode;
    private final NamespaceMode namespaceMode;
    private volatile Trust trust;

    public ProxyChainValidator(Path trustDir, boolean acceptLimited, CrlMode crlMode, NamespaceMode namespaceMode) {
        this.trustDir = trustDir;
        this.acceptLimited = acceptLimited;
        this.crlMode = crlMode;
        this.namespaceMode = namespaceMode;
    }

    /** The identity the chain (leaf first) proves; a CertificateException says why it proves none. */
    public Identity validate(X509Certificate[] chain) throws CertificateException {
        if (chain == null || chain.length == 0) throw new CertificateException("no client certificate");
        int ee = 0;
        boolean limited = false;
        while (ee < chain.length && proxyKind(chain[ee], ee + 1 < chain.length ? chain[ee + 1] : null) != null) ee++;
        if (ee == chain.length) throw new CertificateException("the chain has proxy certificates but no end-entity certificate");
        // proxies, from the one the end-entity certificate signed down to the leaf
        for (int i = ee - 1; i >= 0; i--) {
            X509Certificate proxy = chain[i];
            X509Certificate issuer = chain[i + 1];
            String name = dn(proxy.getSubjectX500Principal());
            try {
                proxy.verify(issuer.getPublicKey());
            } catch (GeneralSecurityException e) {
                throw new CertificateException("proxy " + name + " is not signed by its issuer: " + e.getMessage());
            }
            proxy.checkValidity();
            if (proxy.getBasicConstraints() >= 0) throw new CertificateException("proxy " + name + " claims CA rights");
            boolean[] ku = proxy.getKeyUsage();
            if (ku != null && ku.length > 5 && ku[5]) throw new CertificateException("proxy " + name + " has keyCertSign");
            Set<String> critical = proxy.getCriticalExtensionOIDs() == null ? Set.of() : new HashSet<>(proxy.getCriticalExtensionOIDs());
            critical.removeAll(PROXY_CRITICAL_OK);
            if (!critical.isEmpty()) throw new CertificateException("proxy " + name + " has unknown critical extensions " + critical);
            ProxyInfo info = proxyInfo(proxy);
            if (info != null) {
                if (info.pathLength != null && i > info.pathLength)
                    throw new CertificateException("proxy " + name + " allows " + info.pathLength + " further proxies, the chain has " + i);
                if (LIMITED.equals(info.policy)) limited = true;
                else if (!INHERIT_ALL.equals(info.policy))
                    throw new CertificateException("proxy " + name + " has policy " + info.policy + "; only inheritAll and limited proxies are accepted");
            } else if (name.endsWith("/CN=limited proxy")) {
                limited = true;
            }
        }
        if (limited && !acceptLimited) throw new CertificateException("limited proxies are not accepted here");
        List<X509Certificate> path = new ArrayList<>();
        for (int i = ee; i < chain.length; i++) {
            X509Certificate c = chain[i];
            if (!c.getSubjectX500Principal().equals(c.getIssuerX500Principal())) path.add(c); // a root the client sent is not part of the path
        }
        Trust t = trust();
        if (t.anchors().isEmpty()) throw new CertificateException("no trusted CA certificates in " + trustDir);
        try {
            PKIXParameters params = new PKIXParameters(t.anchors());
            CertPathValidator validator = CertPathValidator.getInstance("PKIX");
            if (crlMode == CrlMode.IGNORE) {
                params.setRevocationEnabled(false);
            } else {
                params.addCertStore(t.crls());
                PKIXRevocationChecker revocation = (PKIXRevocationChecker) validator.getRevocationChecker();
                EnumSet<PKIXRevocationChecker.Option> options = EnumSet.of(PKIXRevocationChecker.Option.PREFER_CRLS,
                        PKIXRevocationChecker.Option.NO_FALLBACK);
                // SOFT_FAIL accepts an undetermined status (no current CRL), never a revoked certificate
                if (crlMode == CrlMode.IF_VALID) options.add(PKIXRevocationChecker.Option.SOFT_FAIL);
                revocation.setOptions(options);
                params.addCertPathChecker(revocation);
            }
            validator.validate(CertificateFactory.getInstance("X.509").generateCertPath(path), params);
        } catch (GeneralSecurityException e) {
            throw new CertificateException("certificate " + dn(chain[ee].getSubjectX500Principal()) + " is not trusted: " + e.getMessage());
        }
        checkNamespaces(path, t.policies());
        return new Identity(dn(chain[ee].getSubjectX500Principal()), ee, limited);
    }

    /** Each certificate's subject is in its issuer's namespace (the path holds the end entity and intermediates). */
    private void checkNamespaces(List<X509Certificate> path, SigningPolicies policies) throws CertificateException {
        if (namespaceMode == NamespaceMode.IGNORE) return;
        for (X509Certificate c : path) {
            String ca = dn(c.getIssuerX500Principal()), subject = dn(c.getSubjectX500Principal());
            if (!policies.covers(ca)) {
                if (namespaceMode == NamespaceMode.REQUIRE)
                    throw new CertificateException("certificate " + subject + ": its CA " + ca + " has no signing policy");
                continue;
            }
            if (!policies.permits(ca, subject))
                throw new CertificateException("certificate " + subject + " is outside the namespace its CA " + ca
                        + " may sign (signing_policy)");
        }
    }

    /** "rfc3820", "draft" or "legacy" when {@code c} is a proxy issued by {@code issuer}; else null. */
    static String proxyKind(X509Certificate c, X509Certificate issuer) {
        if (c.getExtensionValue(PROXY_CERT_INFO) != null) return "rfc3820";
        if (c.getExtensionValue(PROXY_CERT_INFO_DRAFT) != null) return "draft";
        String subject = dn(c.getSubjectX500Principal());
        String issuerDn = dn(c.getIssuerX500Principal());
        if (issuer != null && (subject.equals(issuerDn + "/CN=proxy") || subject.equals(issuerDn + "/CN=limited proxy"))) return "legacy";
        return null;
    }

    private record ProxyInfo(Integer pathLength, String policy) {}

    /** ProxyCertInfo ::= SEQUENCE { pCPathLenConstraint INTEGER OPTIONAL, proxyPolicy SEQUENCE { policyLanguage OID, policy OCTET STRING OPTIONAL } } */
    private static ProxyInfo proxyInfo(X509Certificate c) throws CertificateException {
        byte[] ext = c.getExtensionValue(PROXY_CERT_INFO);
        if (ext == null) ext = c.getExtensionValue(PROXY_CERT_INFO_DRAFT);
        if (ext == null) return null;
        String name = dn(c.getSubjectX500Principal());
        // RFC 3820 3.4: the subject is the issuer's plus exactly one CN
        String issuer = dn(c.getIssuerX500Principal());
        if (!name.startsWith(issuer + "/CN=") || name.substring(issuer.length() + 4).contains("/"))
            throw new CertificateException("proxy " + name + " is not named after its issuer " + issuer + " plus one CN");
        try {
            ASN1Sequence seq = ASN1Sequence.getInstance(ASN1Primitive.fromByteArray(ASN1OctetString.getInstance(ext).getOctets()));
            Integer len = null;
            String policy = null;
            for (ASN1Encodable e : seq.toArray()) {
                ASN1Primitive p = e.toASN1Primitive();
                if (p instanceof ASN1Integer i) {
                    BigInteger v = i.getValue();
                    len = v.bitLength() > 30 ? Integer.MAX_VALUE : v.intValue();
                } else if (p instanceof ASN1Sequence s && s.size() > 0 && s.getObjectAt(0) instanceof ASN1ObjectIdentifier oid) {
                    policy = oid.getId();
                }
            }
            if (policy == null) throw new CertificateException("proxy " + name + " has no proxy policy");
            return new ProxyInfo(len, policy);
        } catch (IOException | IllegalArgumentException e) {
            throw new CertificateException("proxy " + name + " has a malformed ProxyCertInfo extension: " + e.getMessage());
        }
    }

    /** {@code /DC=org/DC=example/CN=Jane}: the OpenSSL slash form, most significant RDN first. */
    public static String dn(X500Principal p) {
        try {
            List<Rdn> rdns = new LdapName(p.getName(X500Principal.RFC2253, OPENSSL_NAMES)).getRdns(); // least significant last
            StringBuilder b = new StringBuilder();
            for (Rdn rdn : rdns) {
                b.append('/');
                var attrs = rdn.toAttributes().getAll();
                boolean first = true;
                while (attrs.hasMore()) {
                    var a = attrs.next();
                    if (!first) b.append('+');
                    b.append(a.getID()).append('=').append(a.get());
                    first = false;
                }
            }
            return b.toString();
        } catch (javax.naming.NamingException e) {
            return p.getName(); // not expected for names the JDK printed itself
        }
    }

    /**
     * CA certificates and CRLs of the trust directory (or bundle), read again when the directory changes (a
     * file added or replaced by rename, as fetch-crl does) and at least every 5 minutes.
     */
    private Trust trust() {
        Trust t = trust;
        try {
            FileTime m = Files.getLastModifiedTime(trustDir);
            if (t != null && m.equals(t.modified()) && System.nanoTime() - t.readAt() < RELOAD_NANOS) return t;
            Set<TrustAnchor> out = new HashSet<>();
            List<X509CRL> crls = new ArrayList<>();
            List<Path> policyFiles = new ArrayList<>();
            CertificateFactory cf = CertificateFactory.getInstance("X.509");
            List<Path> files = new ArrayList<>();
            if (Files.isDirectory(trustDir)) {
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(trustDir)) {
                    for (Path f : ds) {
                        String name = f.getFileName().toString();
                        if (ANCHOR_FILE.matcher(name).matches()) files.add(f);
                        else if (CRL_FILE.matcher(name).matches()) readCrls(cf, f, crls);
                        else if (name.endsWith(".signing_policy")) policyFiles.add(f);
                    }
                }
            } else {
                files.add(trustDir);
            }
            for (Path f : files) {
                try (InputStream in = Files.newInputStream(f)) {
                    for (var c : cf.generateCertificates(in)) {
                        X509Certificate x = (X509Certificate) c;
                        if (x.getBasicConstraints() >= 0) out.add(new TrustAnchor(x, null));
                    }
                } catch (IOException | CertificateException e) {
                    log.warn("trust directory {}: cannot read {}: {}", trustDir, f.getFileName(), e.getMessage());
                }
            }
            SigningPolicies policies = SigningPolicies.read(policyFiles, (f, why) ->
                    log.warn("trust directory {}: cannot read the signing policy {}: {}", trustDir, f.getFileName(), why));
            Trust read = new Trust(Set.copyOf(out), CertStore.getInstance("Collection", new CollectionCertStoreParameters(crls)),
                    crls.size(), policies, m, System.nanoTime());
            if (t == null || t.anchors().size() != read.anchors().size() || t.crlCount() != read.crlCount()
                    || t.policies().size() != policies.size()) {
                log.info("client certificates: {} trusted CA certificates, {} CRLs and {} signing policies from {} "
                        + "(CRL mode {}, namespace mode {})", out.size(), crls.size(), policies.size(), trustDir, crlMode, namespaceMode);
            }
            trust = read;
            return read;
        } catch (IOException | GeneralSecurityException e) {
            log.warn("cannot read the trust directory {}: {}", trustDir, e.toString());
            return t != null ? t : new Trust(Set.of(), emptyStore(), 0, SigningPolicies.none(), null, System.nanoTime());
        }
    }

    private void readCrls(CertificateFactory cf, Path f, List<X509CRL> into) {
        try (InputStream in = Files.newInputStream(f)) {
            for (var c : cf.generateCRLs(in)) into.add((X509CRL) c);
        } catch (IOException | java.security.cert.CRLException e) {
            log.warn("trust directory {}: cannot read the CRL {}: {}", trustDir, f.getFileName(), e.getMessage());
        }
    }

    private static CertStore emptyStore() {
        try {
            return CertStore.getInstance("Collection", new CollectionCertStoreParameters(List.of()));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return "ProxyChainValidator" + Arrays.asList(trustDir);
    }
}
