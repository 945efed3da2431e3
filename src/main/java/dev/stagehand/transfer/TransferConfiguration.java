package dev.stagehand.transfer;

import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The service's mover: one GridFTP mover (its links and connection pools) shared by every caller. */
@Configuration
@EnableConfigurationProperties(TransferProperties.class)
class TransferConfiguration {

    @Bean(destroyMethod = "close")
    Mover mover(TransferProperties properties) {
        return Movers.gridFtp(properties.mover(), null);
    }
}
