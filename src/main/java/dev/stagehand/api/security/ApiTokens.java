package dev.stagehand.api.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Service;

/**
 * Bearer tokens for scripts, in PostgreSQL ({@code api_token}). A token is {@code sht_} and 32 random bytes
 * (base64url); only its SHA-256 is stored, so a database dump does not give tokens away. A revoked or expired
 * token stops working at the next call (nothing is cached).
 */
@Service
public class ApiTokens {

    static final String PREFIX = "sht_";
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A token as listed: never the token itself. */
    public record TokenInfo(UUID id, String account, String label, Instant createdAt, String createdBy, Instant expiresAt,
                            Instant revokedAt) {}

    /** A new token: {@code token} is shown this once. */
    public record NewToken(TokenInfo info, String token) {}

    private final JdbcTemplate jdbc;

    ApiTokens(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** Makes a token for an existing account; {@code expiresAt} null: until revoked. */
    public NewToken create(String account, String label, Instant expiresAt, String createdBy) {
        String token = generate();
        UUID id = UUID.randomUUID();
        jdbc.update("INSERT INTO api_token (id, account, label, token_sha256, created_by, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                id, account, label, sha256(token), createdBy, expiresAt == null ? null : Timestamp.from(expiresAt));
        return new NewToken(find(id).orElseThrow(), token);
    }

    public Optional<TokenInfo> find(UUID id) {
        return jdbc.query(SELECT + " WHERE id = ?", ROW, id).stream().findFirst();
    }

    /** Tokens, newest first; of one account when {@code account} is not null. */
    public List<TokenInfo> list(String account) {
        return account == null ? jdbc.query(SELECT + " ORDER BY created_at DESC", ROW)
                : jdbc.query(SELECT + " WHERE account = ? ORDER BY created_at DESC", ROW, account);
    }

    /** Revokes a token; false when there is none with this id. Revoking twice keeps the first time. */
    public boolean revoke(UUID id) {
        jdbc.update("UPDATE api_token SET revoked_at = now() WHERE id = ? AND revoked_at IS NULL", id);
        return find(id).isPresent();
    }

    /** The account of a valid (known, not revoked, not expired) token. */
    public Optional<String> account(String token) {
        if (token == null || !token.startsWith(PREFIX)) return Optional.empty();
        return jdbc.queryForList("SELECT account FROM api_token WHERE token_sha256 = ? AND revoked_at IS NULL "
                + "AND (expires_at IS NULL OR expires_at > now())", String.class, sha256(token)).stream().findFirst();
    }

    static String generate() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    static String sha256(String token) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static final String SELECT = "SELECT id, account, label, created_at, created_by, expires_at, revoked_at FROM api_token";
    private static final RowMapper<TokenInfo> ROW = (rs, i) -> new TokenInfo(rs.getObject(1, UUID.class), rs.getString(2),
            rs.getString(3), ts(rs.getTimestamp(4)), rs.getString(5), ts(rs.getTimestamp(6)), ts(rs.getTimestamp(7)));

    private static Instant ts(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
