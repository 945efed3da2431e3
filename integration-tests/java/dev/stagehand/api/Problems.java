package dev.stagehand.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.api.ApiClient.Answer;
import tools.jackson.databind.JsonNode;

/** What every refusal of the API must look like: an RFC 9457 problem document. */
final class Problems {

    private Problems() {}

    /** {@code status}, also in the body; the problem media type; a detail, containing each of {@code detailParts}. */
    static void assertProblem(Answer a, int status, String... detailParts) {
        assertThat(a.status()).as(a.body()).isEqualTo(status);
        assertThat(a.contentType()).startsWith("application/problem+json");
        assertThat(a.json().get("status").intValue()).isEqualTo(status);
        assertThat(a.json().get("detail").stringValue()).isNotBlank();
        if (detailParts.length > 0) assertThat(a.json().get("detail").stringValue()).contains(detailParts);
    }

    /** A problem whose first entry error names {@code field}, with a reason containing {@code reason}. */
    static void assertFieldProblem(Answer a, int status, String field, String reason) {
        assertProblem(a, status);
        JsonNode e = a.json().get("errors").get(0);
        assertThat(e.get("field").asString()).isEqualTo(field);
        assertThat(e.get("reason").asString()).contains(reason);
    }
}
