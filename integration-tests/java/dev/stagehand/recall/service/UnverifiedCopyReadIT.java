package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.Staging;
import dev.stagehand.tape.SimulatedContent;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A recall's read of a tape copy written without a checksum from the library (segment.verified false, V53): a
 * read that matches the catalogue confirms the copy; one that does not says the copy was never confirmed.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class UnverifiedCopyReadIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired JdbcClient db;
    @Autowired TransactionTemplate tx;
    @TempDir Path tmp;

    final String tag = UUID.randomUUID().toString().substring(0, 8);

    /** A file with one unverified copy on volume V{tag}, and the staging a recall runs; the slot reserved for it. */
    record Case(FileWork file, CacheStaging staging, Staging.Slot slot) {}

    Case unverifiedCopy(String leaf) {
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000, "uv-" + tag, new VirtualClock());
        CacheStaging staging = new CacheStaging(cache, jdbc, 1_000_000, RecallMetrics.NONE, ids -> { });
        Long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) ON CONFLICT (label) DO UPDATE SET label = excluded.label"
                + " RETURNING id", Long.class, "V" + tag);
        String name = "/it/" + tag + "/" + leaf;
        long id = ItDb.simulatedFile(jdbc, name, 100_000);
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes, verified) VALUES (?, ?, 0, false)", id, volume);
        FileWork f = new FileWork(id, name, 100_000, List.of(new Copy("V" + tag, 0)), "atlas", null,
                SimulatedContent.adler32Hex(name, 100_000));
        return new Case(f, staging, staging.reserve("V" + tag, List.of(f)).getFirst());
    }

    @Test
    void aReadThatMatchesTheCatalogueConfirmsTheCopy() throws Exception {
        Case c = unverifiedCopy("good");
        long adler = SimulatedContent.writeTo(c.file().name(), c.file().sizeBytes(), c.slot().target());

        assertThat(c.staging().commit(c.file(), "V" + tag, c.slot(), adler)).isEqualTo(Staging.Committed.KEPT);
        assertThat(jdbc.queryForObject("SELECT verified FROM segment WHERE file_id = ?", Boolean.class, c.file().id()))
                .as("confirmed from the volume by the read").isTrue();
    }

    @Test
    void aReadThatDoesNotMatchSaysTheCopyWasNeverConfirmed() throws Exception {
        Case c = unverifiedCopy("bad");
        long adler = SimulatedContent.writeTo(c.file().name() + "-other", c.file().sizeBytes(), c.slot().target());

        Staging.Committed r = c.staging().commit(c.file(), "V" + tag, c.slot(), adler);

        assertThat(r.verdict()).isEqualTo(Staging.Verdict.REFUSED);
        assertThat(r.reason()).contains("segment marked suspect").contains("never confirmed from the volume");
        assertThat(jdbc.queryForObject("SELECT state || ' ' || verified FROM segment WHERE file_id = ?", String.class, c.file().id()))
                .isEqualTo("suspect false");
    }
}
