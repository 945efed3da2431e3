package dev.stagehand.transfer;

import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The service's mover: one GridFTP mover (its links and connection pools) shared by every caller, metered for the console. */
@Configuration
@EnableConfigurationProperties(TransferProperties.class)
class TransferConfiguration {

    @Bean
    TransferObserver transferObserver(org.springframework.beans.factory.ObjectProvider<io.micrometer.core.instrument.MeterRegistry> registry,
                                      org.springframework.beans.factory.ObjectProvider<Mover> mover) {
        return new TransferObserver(registry, mover);
    }

    @Bean(destroyMethod = "close")
    Mover mover(TransferProperties properties, TransferRates rates, TransferObserver observer) {
        return Movers.gridFtp(properties.mover(), rates.and(observer));
    }
}
