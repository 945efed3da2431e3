package dev.stagehand.replication;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import com.zaxxer.hikari.HikariDataSource;
import java.util.Properties;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.quartz.Scheduler;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.quartz.autoconfigure.QuartzProperties;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.scheduling.quartz.SchedulerFactoryBean;

/**
 * The service's Quartz scheduler reads its own context's DataSource, whatever other scheduler of the same name
 * another context of the JVM starts and closes (the integration tests' cached contexts, a CLI command run
 * in-process): with Spring's plain job store every scheduler named "stagehand" used the pool of the one made
 * last, and its cluster manager failed on that pool once its context closed.
 */
@SpringBootTest
class QuartzDataSourceIT {

    @Autowired Scheduler scheduler;
    @Autowired QuartzProperties quartz;
    @Autowired DataSource dataSource;

    @Test
    void anotherContextsSchedulerOfTheSameNameLeavesThisOnesPoolAlone() throws Exception {
        assertThat(scheduler.getSchedulerName()).isEqualTo("stagehand");
        HikariDataSource ours = (HikariDataSource) dataSource;
        HikariDataSource theirs = new HikariDataSource();
        theirs.setJdbcUrl(ours.getJdbcUrl());
        theirs.setUsername(ours.getUsername());
        theirs.setPassword(ours.getPassword());
        theirs.setMaximumPoolSize(1);
        theirs.setPoolName("other-context");
        // as Spring Boot makes the scheduler of another context: the service's name and Quartz settings, its own pool
        SchedulerFactoryBean other = new SchedulerFactoryBean();
        other.setSchedulerName(scheduler.getSchedulerName());
        Properties props = new Properties();
        props.putAll(quartz.getProperties());
        other.setQuartzProperties(props);
        other.setDataSource(theirs);
        other.setAutoStartup(false);
        other.afterPropertiesSet();
        // ... and that context closes: its scheduler first, then its pool
        other.destroy();
        theirs.close();

        // what this scheduler's cluster manager and misfire handler do every few seconds: read the job store
        assertThatCode(scheduler::getJobGroupNames).as("this context's scheduler on its own pool").doesNotThrowAnyException();
    }
}
