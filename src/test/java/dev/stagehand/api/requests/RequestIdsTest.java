package dev.stagehand.api.requests;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;

class RequestIdsTest {

    @Test
    void onlyTheCanonicalFormIsAnId() {
        UUID id = UUID.randomUUID();
        assertThat(RequestIds.parse(id.toString())).contains(id);
        assertThat(RequestIds.parse("1-2-3-4-5")).as("UUID.fromString takes it").isEmpty();
        assertThat(RequestIds.parse("not-a-uuid")).isEmpty();
        assertThat(RequestIds.parse("123e4567-e89b-12d3-a456-42661417400g")).as("36 characters, not hex").isEmpty();
    }
}
