package dev.stagehand.api.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Storage scopes (WLCG Common JWT Profile §3.3) and the token issuers' configuration checks; tokens: ApiJwtIT. */
class WlcgTokensTest {

    @Test
    void storageScopesCoverTheirPathAndBelowUnderTheBasePath() {
        StorageScopes s = StorageScopes.parse("openid offline_access storage.stage:/store/data storage.read:/", "/cms");
        assertThat(s.list()).containsExactlyInAnyOrder("storage.stage:/cms/store/data", "storage.read:/cms");
        assertThat(s.allows(StorageScopes.Op.STAGE, "/cms/store/data/f1")).isTrue();
        assertThat(s.allows(StorageScopes.Op.STAGE, "/cms/store/data")).isTrue();
        assertThat(s.allows(StorageScopes.Op.STAGE, "/cms/store/database/f1")).isFalse(); // a prefix of a name is not a directory
        assertThat(s.allows(StorageScopes.Op.STAGE, "/cms/store/other")).isFalse();
        assertThat(s.allows(StorageScopes.Op.READ, "/cms/store/other")).isTrue();
        assertThat(s.allows(StorageScopes.Op.READ, "/atlas/f")).isFalse(); // outside the base path
        assertThat(s.grants(StorageScopes.Op.CREATE)).isFalse();
        assertThat(s.refusal(StorageScopes.Op.STAGE)).contains("storage.stage", "/cms/store/data");
    }

    @Test
    void stageIncludesReadAndABareScopeMeansEverything() {
        StorageScopes s = StorageScopes.parse("storage.stage", "/");
        assertThat(s.allows(StorageScopes.Op.READ, "/any/file")).isTrue();
        assertThat(s.grants(StorageScopes.Op.READ)).isTrue();
        assertThat(s.allows(StorageScopes.Op.MODIFY, "/any/file")).isFalse();
    }

    @Test
    void tokensWithoutStorageScopesAreNotLimitedAndBadScopePathsGrantNothing() {
        assertThat(StorageScopes.parse("openid profile wlcg.groups", "/")).isNull();
        assertThat(StorageScopes.parse(null, "/")).isNull();
        StorageScopes s = StorageScopes.parse("storage.stage:/a/../b storage.stage:relative storage.read:/ok//dir/", "/");
        assertThat(s).isNotNull(); // still scoped: the bad scopes must not widen it to the account's rights
        assertThat(s.grants(StorageScopes.Op.STAGE)).isFalse();
        assertThat(s.allows(StorageScopes.Op.READ, "/ok/dir/f")).isTrue();
        assertThat(s.allows(StorageScopes.Op.READ, "/b/f")).isFalse();
    }

    @Test
    void pathsBetweenTwoBeneathOneScopePathAreAllowedAndNothingElseIsClaimed() {
        StorageScopes s = StorageScopes.parse("storage.read:/store/a storage.stage:/store/b", "/cms");
        assertThat(s.allowsAllBetween(StorageScopes.Op.READ, "/cms/store/a/f1", "/cms/store/a/z/f9")).isTrue();
        assertThat(s.allowsAllBetween(StorageScopes.Op.READ, "/cms/store/b/f1", "/cms/store/b/f2")).isTrue(); // stage reads
        assertThat(s.allowsAllBetween(StorageScopes.Op.STAGE, "/cms/store/a/f1", "/cms/store/a/f2")).isFalse();
        // beneath two granted paths, but what sorts between them ("/cms/store/a-b/f") may be beneath neither: not claimed
        assertThat(s.allowsAllBetween(StorageScopes.Op.READ, "/cms/store/a/f1", "/cms/store/b/f1")).isFalse();
        // the scope path itself sorts before names such as "/cms/store/a-b/f", which it does not cover: not claimed
        assertThat(s.allowsAllBetween(StorageScopes.Op.READ, "/cms/store/a", "/cms/store/a/f1")).isFalse();
        assertThat(s.allowsAllBetween(StorageScopes.Op.READ, "/cms/store/a-b/f", "/cms/store/a/f1")).isFalse();
        assertThat(StorageScopes.parse("storage.read:/", "/").allowsAllBetween(StorageScopes.Op.READ, "/a/f", "/z/f")).isTrue();
    }

    @Test
    void jwtShapeIsThreeBase64UrlPartsWithAJsonHeader() {
        assertThat(WlcgTokens.looksLikeJwt("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln")).isTrue();
        assertThat(WlcgTokens.looksLikeJwt("sht_abcdef")).isFalse();
        assertThat(WlcgTokens.looksLikeJwt("eyJ.a")).isFalse();
    }

    @Test
    void badIssuerConfigurationStopsTheStartNamingTheKey() {
        assertThatThrownBy(() -> new WlcgTokens(List.of(issuer("http://iam.example.org/", null, "/"))))
                .hasMessageContaining("token-issuers[0].issuer").hasMessageContaining("https");
        assertThatThrownBy(() -> new WlcgTokens(List.of(issuer("https://iam.example.org/", URI.create("http://keys.example.org/jwk"), "/"))))
                .hasMessageContaining("token-issuers[0].jwks");
        assertThatThrownBy(() -> new WlcgTokens(List.of(issuer("https://iam.example.org/", null, "relative"))))
                .hasMessageContaining("base-path");
        assertThatThrownBy(() -> new WlcgTokens(List.of(issuer("https://a.example.org/", null, "/"), issuer("https://a.example.org/", null, "/"))))
                .hasMessageContaining("token-issuers[1].issuer").hasMessageContaining("twice");
        assertThatThrownBy(() -> new WlcgTokens(List.of(new ApiSecurityProperties.TokenIssuer("https://a.example.org/", null, null,
                List.of(new ApiSecurityProperties.GroupAccount("/cms", null)), null, null))))
                .hasMessageContaining("token-issuers[0].groups[0]");
        assertThat(new WlcgTokens(List.of(issuer("http://127.0.0.1:8080/iam", null, "/"))).configured()).isTrue(); // loopback
        assertThat(new WlcgTokens(List.of()).configured()).isFalse();
    }

    private static ApiSecurityProperties.TokenIssuer issuer(String iss, URI jwks, String base) {
        return new ApiSecurityProperties.TokenIssuer(iss, jwks, null, List.of(), "someone", base);
    }
}
