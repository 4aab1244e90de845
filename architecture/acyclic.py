"""An import-linter contract: no import circle among the modules inside a package.

import-linter's own ``acyclic_siblings`` squashes a package's descendants into its children and so
forbids circles between sibling *packages*; the rule in ``docs/architecture.md`` is about *modules*
(a registry importing the design modules that register in it is fine, two services that import each
other are not). Every import counts, also one inside a function (a late import only hides a circle).

    [[tool.importlinter.contracts]]
    type = "architecture.acyclic.AcyclicModulesContract"
    containers = ["studies"]
"""
from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def strongly_connected(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), those of two or more nodes, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


class AcyclicModulesContract(Contract):
    """No circle of imports among the modules of each container (the container's own descendants)."""

    type_name = "acyclic_modules"
    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        circles = []
        for container in self.containers:  # type: ignore[attr-defined]
            modules = graph.find_descendants(container) | {container}
            edges = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
            for component in strongly_connected(modules, edges):
                members = set(component)
                lines = []
                for importer in component:
                    for imported in sorted(edges[importer] & members):
                        for detail in graph.get_import_details(importer=importer, imported=imported):
                            lines.append(f"{importer} -> {imported} (l. {detail['line_number']}: {detail['line_contents']})")
                circles.append({"container": container, "modules": component, "imports": lines})
        return ContractCheck(kept=not circles, metadata={"circles": circles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for circle in check.metadata["circles"]:
            output.print_error(f"A circle of {len(circle['modules'])} modules in {circle['container']}:")
            for line in circle["imports"]:
                output.indent_cursor()
                output.print_error(line, bold=False)
            output.new_line()
