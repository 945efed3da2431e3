package dev.stagehand.replication;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import org.junit.jupiter.api.Test;

/** A file's URL at a site decodes to exactly its logical name, whatever characters the name holds. */
class ReplicaUrlTest {

    @Test
    void theDecodedPathIsTheNameItself() {
        for (String name : new String[] {"/d/with space.prdf", "/d/run#1", "/d/run#2", "/d/q?x=1", "/d/pct%41", "/d/ü €", "/d/a+b;c=d"}) {
            URI u = ReplicationEngine.url("gsiftp://se.example.org:2811/data/", name);
            assertThat(u.getPath()).isEqualTo("/data" + name);
            assertThat(u.getFragment()).isNull();
            assertThat(u.getQuery()).isNull();
        }
        assertThat(ReplicationEngine.url("gsiftp://h:2811/data", "/d/run#1"))
                .isNotEqualTo(ReplicationEngine.url("gsiftp://h:2811/data", "/d/run#2"));
    }

    @Test
    void aLoadBalancedEndpointKeepsItsHostList() {
        URI u = ReplicationEngine.url("gsiftp://a.example.org:2811,b.example.org:2811/data", "/d/f 1");
        assertThat(u.getRawAuthority()).isEqualTo("a.example.org:2811,b.example.org:2811");
        assertThat(u.getPath()).isEqualTo("/data/d/f 1");
    }
}
