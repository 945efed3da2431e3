package dev.stagehand.api.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import javax.security.auth.x500.X500Principal;
import org.junit.jupiter.api.Test;

/** Grid-mapfile lines as GridFTP servers accept them, and DNs in the OpenSSL slash form. */
class GridMapfileTest {

    @Test
    void quotedAndBareDnsCommentsSeveralAccountsAndEscapes() {
        Map<String, List<String>> m = GridMapfile.parse(List.of(
                "# comment",
                "",
                "\"/DC=org/DC=example/CN=Jane Doe\" jane,atlasprd",
                "/DC=org/DC=example/CN=bare\tbare_user",
                "  \"/O=Grid/CN=say \\\"hi\\\"\"   quoted , second ",
                "\"/DC=org/DC=example/CN=Jane Doe\" later-line-ignored",
                "\"/unterminated jane",
                "no-slash-dn account",
                "\"/O=Grid/CN=nobody\""), "test");
        assertThat(m.get("/DC=org/DC=example/CN=Jane Doe")).containsExactly("jane", "atlasprd");
        assertThat(m.get("/DC=org/DC=example/CN=bare")).containsExactly("bare_user");
        assertThat(m.get("/O=Grid/CN=say \"hi\"")).containsExactly("quoted", "second");
        assertThat(m).hasSize(3);
    }

    @Test
    void dnsAreWrittenMostSignificantFirstWithOpenSslNames() {
        assertThat(ProxyChainValidator.dn(new X500Principal("CN=Jane Doe, OU=Physics, DC=example, DC=org")))
                .isEqualTo("/DC=org/DC=example/OU=Physics/CN=Jane Doe");
        assertThat(ProxyChainValidator.dn(new X500Principal("EMAILADDRESS=jane@example.org, CN=Jane, O=Grid, C=DE")))
                .isEqualTo("/C=DE/O=Grid/CN=Jane/emailAddress=jane@example.org");
        assertThat(ProxyChainValidator.dn(new X500Principal("CN=a\\, b, O=Grid"))).isEqualTo("/O=Grid/CN=a, b");
    }
}
