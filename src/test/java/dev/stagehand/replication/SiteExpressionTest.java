package dev.stagehand.replication;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SiteExpressionTest {

    record S(String name, Map<String, String> attributes) implements SiteExpression.Candidate {}

    static final List<S> SITES = List.of(
            new S("CERN", Map.of("tier", "0", "country", "CH")),
            new S("FZK", Map.of("tier", "1", "country", "DE")),
            new S("BNL", Map.of("tier", "1", "country", "US", "region", "US")),
            new S("RAL", Map.of("tier", "1", "country", "UK")),
            new S("DESY", Map.of("tier", "2", "country", "DE")),
            new S("LAPTOP", Map.of()));

    static List<String> match(String expr) {
        SiteExpression e = SiteExpression.parse(expr);
        return SITES.stream().filter(e::matches).map(S::name).toList();
    }

    @Test
    void namesAndAttributes() {
        assertThat(match("CERN")).containsExactly("CERN");
        assertThat(match("tier=1")).containsExactly("FZK", "BNL", "RAL");
        assertThat(match("country=DE")).containsExactly("FZK", "DESY");
        assertThat(match("*")).hasSize(6);
        assertThat(match("NOSUCH")).isEmpty();
    }

    @Test
    void intersectionUnionDifferenceAndPrecedence() {
        assertThat(match("tier=1&country!=DE")).containsExactly("BNL", "RAL");
        assertThat(match("tier=0|tier=2")).containsExactly("CERN", "DESY");
        assertThat(match("tier=1\\BNL")).containsExactly("FZK", "RAL");
        // & binds tighter than |: CERN | (tier=1 & country=DE)
        assertThat(match("CERN|tier=1&country=DE")).containsExactly("CERN", "FZK");
        assertThat(match("(CERN|tier=1)&country=DE")).containsExactly("FZK");
        // left to right: (* \ tier=1) | RAL
        assertThat(match("*\\tier=1|RAL")).containsExactly("CERN", "RAL", "DESY", "LAPTOP");
        assertThat(match(" ( tier = 1 ) & ( country != US ) ")).containsExactly("FZK", "RAL");
    }

    @Test
    void missingAttributes() {
        assertThat(match("country!=DE")).containsExactly("CERN", "BNL", "RAL", "LAPTOP"); // no country: not DE
        assertThat(match("tier<2")).containsExactly("CERN", "FZK", "BNL", "RAL");        // no tier: no comparison
        assertThat(match("tier>=1&tier<=1")).containsExactly("FZK", "BNL", "RAL");
        assertThat(match("tier>1")).containsExactly("DESY");
        assertThat(match("region=US")).containsExactly("BNL");
    }

    @Test
    void malformedExpressionsSayWhere() {
        assertThatThrownBy(() -> SiteExpression.parse("")).hasMessageContaining("empty");
        assertThatThrownBy(() -> SiteExpression.parse("tier=")).hasMessageContaining("expected a value after 'tier='");
        assertThatThrownBy(() -> SiteExpression.parse("(tier=1")).hasMessageContaining("expected ')'");
        assertThatThrownBy(() -> SiteExpression.parse("tier=1 CERN")).hasMessageContaining("unexpected 'C' at position 7");
        assertThatThrownBy(() -> SiteExpression.parse("tier<one")).hasMessageContaining("non-number");
        assertThatThrownBy(() -> SiteExpression.parse("a&&b")).hasMessageContaining("position 2");
        assertThatThrownBy(() -> SiteExpression.parse("tier=1|")).hasMessageContaining("at the end");
    }
}
