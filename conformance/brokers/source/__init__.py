"""Brokers built from the user's clone at any commit: recipes (data in fixtures/recipes/), a read-only view
of the clone with a private checkout, and builds cached per commit.

`load_recipe(name or path)` and `recipe_for_series(series)` give a `Recipe`; `Clone(path)` reads the
repository; `Builder(recipe, clone, base_version).build(commit)` gives a `Built` (or why the commit does not
build); `startable(recipe, builder, built, label)` says how to start it: a managed kind made for the build
(a java-overlay runs as its release's managed broker from the build's home) or a command and URL.
"""

from __future__ import annotations

from .builders import Builder, Built, BuildFailed, start_command
from .git import Clone, CommitInfo
from .recipes import Commands, JavaOverlay, Recipe, available_recipes, load_recipe, recipe_for_series


def startable(recipe: Recipe, builder: Builder, built: Built, label: str) -> dict:
    """How the run starts `built`: {"broker": kind} (a managed kind registered under `label`) or
    {"command", "url", "profile", "ready_timeout"} for a commands recipe."""
    if isinstance(recipe.build, JavaOverlay):
        from .. import register_kind
        base = builder.base_class()
        kind = type(f"Build_{label.replace('-', '_').replace('.', '_')}", (base,), {
            "kind": label, "run_home": built.dir / "home",
            "description": f"{base.description.split(' from ')[0]} with {built.commit[:10]} built on top"})
        register_kind(label, kind)
        return {"broker": label}
    start = recipe.start
    return {"command": start_command(recipe, built), "url": start.url, "profile": start.profile,
            "ready_timeout": start.ready_timeout}


__all__ = ["Builder", "Built", "BuildFailed", "Clone", "CommitInfo", "Commands", "JavaOverlay", "Recipe",
           "available_recipes", "load_recipe", "recipe_for_series", "startable"]
