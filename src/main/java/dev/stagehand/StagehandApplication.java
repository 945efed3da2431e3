package dev.stagehand;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** The Spring Boot application: every capability module lives in a sub-package of this one. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class StagehandApplication {
}
