package dev.stagehand.replication;

import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.EvictionHold;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(ReplicationProperties.class)
class ReplicationConfiguration {

    /** Replicas of files still in the archive buffer are sent from there, not recalled from tape. */
    @Bean
    LocalSource archiveBufferSource(ArchiveBuffer buffer) {
        return buffer::locate;
    }

    /** A file leaves the archive buffer only once the rules on its dataset have their copies. */
    @Bean
    EvictionHold replicaHold(ReplicaHolds holds) {
        return holds::evictable;
    }
}
