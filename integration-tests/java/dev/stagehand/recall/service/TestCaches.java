package dev.stagehand.recall.service;

import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.EventClock;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;

/** A started disk cache of its own (one directory, one node name) on the test database and an event clock. */
final class TestCaches {

    private TestCaches() {}

    static DiskCache cache(JdbcClient db, TransactionTemplate tx, Path dir, long capacityBytes, String node, EventClock clock) {
        Clock c = new Clock() {
            @Override public ZoneId getZone() { return ZoneOffset.UTC; }
            @Override public Clock withZone(ZoneId zone) { return this; }
            @Override public Instant instant() { return clock.now(); }
        };
        DiskCache cache = new DiskCache(db, tx, new CacheProperties(
                List.of(new CacheProperties.Directory(dir, DataSize.ofBytes(capacityBytes), true)), node), c, null);
        cache.start();
        return cache;
    }
}
