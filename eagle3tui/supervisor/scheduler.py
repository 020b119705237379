"""Which stages to start, which wait and why, which services to stop.

A pure function of the configuration, the current statuses and the intent,
so the rules are testable without processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eagle3tui.config import PipelineConfig, topo_order
from eagle3tui.supervisor.deadlines import due
from eagle3tui.supervisor.state import Intent, StageState, StageStatus


@dataclass
class Plan:
    start: list[tuple[str, bool]] = field(default_factory=list)  # (stage, resume?)
    waiting: dict[str, str] = field(default_factory=dict)
    stop_services: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.start and not self.stop_services


def dependency_closure(config: PipelineConfig, names: list[str]) -> list[str]:
    """``names`` plus everything they depend on, transitively."""
    out: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        todo.extend(config.stage(n).depends_on)
    return [s.name for s in config.stages if s.name in out]


def _dep_ok(dep: StageStatus) -> bool:
    if dep.state in (StageState.SUCCEEDED, StageState.SKIPPED):
        return dep.kind != "service" or dep.state == StageState.SKIPPED
    if dep.kind == "service" and dep.state.active and dep.ready:
        return True
    return False


def plan(config: PipelineConfig, statuses: dict[str, StageStatus], intent: Intent,
         now: float) -> Plan:
    """Decide this tick's launches and service stops."""
    p = Plan()
    # GPUs held now, by whom; stages we start this tick hold theirs too.
    holders: list[tuple[str, object]] = [
        (s.name, config.stage(s.name).gpus) for s in statuses.values() if s.state.active
    ]
    wanted = set(intent.wanted)
    for stage in topo_order(config.stages):
        st = statuses[stage.name]
        resume = False
        relaunch = intent.relaunch.get(stage.name)
        if relaunch and not st.state.active:
            if not due(relaunch):  # monotonic within a boot: a clock step changes nothing
                p.waiting[stage.name] = f"{relaunch.get('mode', 'resume')} scheduled"
                continue
            resume = relaunch.get("mode") == "resume"
        elif stage.name not in wanted or st.state not in (StageState.PENDING, StageState.WAITING):
            continue
        blocked = None
        for d in stage.depends_on:
            dep = statuses[d]
            if d in intent.relaunch and not dep.state.active:
                # Its output is about to change: wait for the rerun.
                blocked = f"waiting for {d} ({intent.relaunch[d].get('mode', 'rerun')} queued)"
                break
            if dep.stale:
                why = f"changed ({dep.changed})" if dep.changed else f"stale ({dep.stale})"
                blocked = f"blocked: dependency {d} is {why}; run all to rerun it"
                break
            if _dep_ok(dep):
                continue
            if dep.state in (StageState.FAILED, StageState.STOPPED):
                blocked = f"blocked: dependency {d} {dep.state.value}"
            elif dep.kind == "service" and dep.state.active:
                blocked = f"waiting for service {d} to be ready"
            elif d not in wanted and dep.state == StageState.PENDING:
                blocked = f"waiting for {d} (not started)"
            elif dep.kind == "service" and dep.state == StageState.SUCCEEDED:
                blocked = f"waiting for service {d} (it was stopped; it will be restarted)"
            else:
                blocked = f"waiting for {d}"
            break
        if blocked is None:
            for holder, spec in holders:
                if holder != stage.name and stage.gpus.overlaps(spec):  # type: ignore[arg-type]
                    blocked = f"waiting for GPU {stage.gpus.describe()}: held by {holder}"
                    break
        if blocked:
            p.waiting[stage.name] = blocked
            continue
        p.start.append((stage.name, resume))
        holders.append((stage.name, stage.gpus))

    # A service that a wanted stage needs again is started again.
    for stage in config.stages:
        st = statuses[stage.name]
        if stage.is_service and st.state == StageState.SUCCEEDED and stage.name in wanted:
            needers = [d for d in config.dependents(stage.name)
                       if (d.name in wanted and statuses[d.name].state in (StageState.PENDING,
                                                                            StageState.WAITING))
                       or d.name in intent.relaunch]
            if needers and not any(n == stage.name for n, _ in p.start):
                if not any(stage.gpus.overlaps(spec) for h, spec in holders if h != stage.name):  # type: ignore[arg-type]
                    p.start.append((stage.name, False))
                    holders.append((stage.name, stage.gpus))

    for stage in config.stages:
        st = statuses[stage.name]
        if not stage.is_service or not st.state.active or st.reason == "stopping":
            continue
        deps = config.dependents(stage.name)
        if not deps:
            continue
        needed = any(
            statuses[d.name].state.active
            or (d.name in wanted and statuses[d.name].state in (
                StageState.PENDING, StageState.WAITING, StageState.FAILED, StageState.STOPPED))
            or d.name in intent.relaunch
            for d in deps
        )
        if not needed:
            p.stop_services.append(stage.name)
    return p
