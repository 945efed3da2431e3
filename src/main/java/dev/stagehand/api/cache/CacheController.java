package dev.stagehand.api.cache;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.NumericIds;
import dev.stagehand.api.security.ApiUser;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.cache.DiskCache.CacheDirectory;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.tags.Tag;
import java.time.Instant;
import java.util.List;
import org.springframework.http.MediaType;
import org.springframework.web.bind.WebDataBinder;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.InitBinder;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The cache directories for an admin ({@code /api/v1/admin/cache/**}, admin role): which are out of service and why,
 * and putting one back in service once its disk is repaired. The mark is in the database, so it outlives restarts.
 */
@RestController
@RequestMapping(path = "/api/v1/admin/cache", produces = MediaType.APPLICATION_JSON_VALUE)
@Tag(name = "Cache", description = "admin: cache directories, out of service and back")
class CacheController {

    private final DiskCache cache;

    CacheController(DiskCache cache) {
        this.cache = cache;
    }

    record DirectoryView(int id, String path, long capacityBytes, long usedBytes, long reservedBytes, boolean inService,
                         @Schema(description = "when it was taken out of service; null: in service") Instant outOfServiceSince,
                         @Schema(description = "why; null: in service") String outOfServiceReason) {
        static DirectoryView of(CacheDirectory d) {
            return new DirectoryView(d.id(), d.path().toString(), d.capacityBytes(), d.usedBytes(), d.reservedBytes(),
                    d.inService(), d.outOfServiceSince(), d.outOfServiceReason());
        }
    }

    @GetMapping("/directories")
    @Operation(summary = "Cache directories of every instance, with their out-of-service mark (admin)")
    List<DirectoryView> directories() {
        return cache.directories().stream().map(DirectoryView::of).toList();
    }

    @PostMapping(path = "/directories/{id}/in-service", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Put a cache directory back in service (admin), once its disk is repaired",
            description = "A directory whose staged copies could not be forced to disk 3 times in a row was taken out of "
                    + "service: it gets no new reservations, across restarts, until this. Answers the directory as it is "
                    + "now; one already in service stays so. Either way every instance sharing it counts its copies not "
                    + "forced to disk from none again.")
    DirectoryView inService(@PathVariable int id) {
        CacheDirectory before = cache.putInService(id, ApiUser.current().account()).orElseThrow(() -> notFound(Integer.toString(id)));
        return DirectoryView.of(new CacheDirectory(before.id(), before.path(), before.capacityBytes(), before.usedBytes(),
                before.reservedBytes(), null, null));
    }

    /** An id that is not a number (or beyond an int) names no directory: 404 as an unknown one, as the API answers every id. */
    @InitBinder("id")
    void directoryIds(WebDataBinder binder) {
        NumericIds.register(binder, int.class, CacheController::notFound);
    }

    private static BadInput notFound(String id) {
        return BadInput.notFound("cache directory", id);
    }
}
