package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.flash;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.redirectedUrl;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.stagehand.ItDb;
import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.NewArchiveFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/** The archive page's operator action: deleting a file not yet on tape, audited, refused to viewers. */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.console.admin-password=test-admin-pw"})
@AutoConfigureMockMvc
class ConsoleArchivePageIT {

    @Autowired MockMvc mvc;
    @Autowired JdbcTemplate jdbc;
    @Autowired ArchiveBuffer buffer;
    @Autowired ArchiveProperties props;
    final String tag = UUID.randomUUID().toString().substring(0, 8);

    static RequestPostProcessor as(String name, Role role) {
        return user(new ConsoleUser(name, "{noop}x", role, Set.of(ConsoleUser.ALL)));
    }

    @BeforeEach
    @AfterEach
    void retire() {
        ItDb.retireArchiveBuffer(jdbc); // other tests' files stay out of this one's failures, and this one's out of flushers
    }

    /**
     * A file whose write failed for good is deleted from the archive page by an operator (its producer then registers its
     * right bytes anew), and the action is in the audit log; a viewer may not. The page had no way to do it: only the API.
     */
    @Test
    void anOperatorDeletesAFailedFileFromTheArchivePage() throws Exception {
        Path p = props.landing().toAbsolutePath().resolve("console-archive-it").resolve(tag).resolve("f0");
        Files.createDirectories(p.getParent());
        byte[] bytes = new byte[1000];
        new Random(3).nextBytes(bytes);
        Files.write(p, bytes);
        ArchiveBuffer.ArchiveFileStatus f = buffer.register(List.of(new NewArchiveFile(p.toString(), 1000L, null, "ds-console-" + tag,
                "phenix", null, null))).get(0);
        long id = f.fileId();
        jdbc.update("""
                UPDATE archive_copy SET state = 'failed', attempts = 1, error = 'the buffer file changed after registration',
                       claimed_by = NULL, lease_until = NULL, volume_id = NULL, not_before = now() WHERE file_id = ?""", id);
        jdbc.update("UPDATE archive_file SET state = 'failed' WHERE file_id = ?", id);
        String action = "/console/archive/files/" + id + "/delete";

        mvc.perform(get("/console/archive").with(as("olga-" + tag, Role.OPERATOR))).andExpect(status().isOk())
                .andExpect(content().string(containsString("action=\"" + action + "\"")));
        mvc.perform(post(action).with(as("vic-" + tag, Role.VIEWER)).with(csrf())).andExpect(status().isForbidden());
        assertThat(buffer.file(id)).isPresent();

        mvc.perform(post(action).with(as("olga-" + tag, Role.OPERATOR)).with(csrf()))
                .andExpect(status().is3xxRedirection()).andExpect(redirectedUrl("/console/archive"))
                .andExpect(flash().attribute("message", containsString("Deleted " + f.name())));
        assertThat(buffer.file(id)).isEmpty();
        assertThat(p).as("the producer's bytes stay").exists();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM audit_log WHERE actor = ? AND action = 'archive.delete' AND target = ? "
                + "AND outcome = 'ok'", Long.class, "olga-" + tag, f.name())).isEqualTo(1);

        // again: no such file, refused and audited
        mvc.perform(post(action).with(as("olga-" + tag, Role.OPERATOR)).with(csrf()))
                .andExpect(status().is3xxRedirection()).andExpect(flash().attribute("error", containsString("no archived file with id " + id)));
        assertThat(jdbc.queryForObject("SELECT count(*) FROM audit_log WHERE actor = ? AND action = 'archive.delete' AND outcome = 'refused'",
                Long.class, "olga-" + tag)).isEqualTo(1);
    }
}
