package dev.stagehand.console;

import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationSchedules;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/** The datasets page: completeness of each dataset at each site (OK / REPLICATING / STUCK and why), rules, schedules. */
@Controller
@RequestMapping("/console/datasets")
class DatasetsPage {

    private final ReplicationRules rules;
    private final ReplicationSchedules schedules;

    DatasetsPage(ReplicationRules rules, ReplicationSchedules schedules) {
        this.rules = rules;
        this.schedules = schedules;
    }


    @GetMapping
    String page(Model model) {
        fill(model);
        return "console/datasets";
    }

    @GetMapping("/live")
    String live(Model model) {
        fill(model);
        return "console/datasets :: live";
    }

    private void fill(Model model) {
        model.addAttribute("matrix", rules.completenessAll());
        model.addAttribute("rules", rules.list(null));
        model.addAttribute("schedules", schedules.list());
    }
}
