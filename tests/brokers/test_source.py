"""Builds from source, the pure parts: reading poms, planning the dependencies a java-overlay build moves, adds
and compiles against, Maven's resource filtering, a jar's identity, release tag patterns, and a java-overlay's
home (the release's files, the build's jar first, moved dependencies in place of the release's)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from conformance.brokers.source import maven
from conformance.brokers.source.git import tag_pattern
from conformance.brokers.source.recipes import load_recipe, parse_recipe
from conformance.errors import UsageError

PARENT = b"""<?xml version="1.0"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <groupId>org.example</groupId><artifactId>broker-parent</artifactId><version>2.1.0-SNAPSHOT</version>
  <properties>
    <netty.version>4.1.115.Final</netty.version>
    <slf4j.version>2.0.16</slf4j.version>
    <native.classifier>linux-x86_64</native.classifier>
    <jsr305.version>3.0.2</jsr305.version>
  </properties>
  <dependencyManagement><dependencies>
    <dependency><groupId>io.netty</groupId><artifactId>netty-buffer</artifactId><version>${netty.version}</version></dependency>
    <dependency><groupId>io.netty</groupId><artifactId>netty-transport-native-epoll</artifactId>
      <version>${netty.version}</version><classifier>${native.classifier}</classifier></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>${slf4j.version}</version></dependency>
    <dependency><groupId>org.osgi</groupId><artifactId>osgi.cmpn</artifactId><version>7.0.0</version>
      <scope>provided</scope></dependency>
    <dependency><groupId>com.google.code.findbugs</groupId><artifactId>jsr305</artifactId>
      <version>${jsr305.version}</version></dependency>
    <dependency><groupId>org.example</groupId><artifactId>new-thing</artifactId><version>1.0</version></dependency>
    <dependency><groupId>org.example</groupId><artifactId>mystery</artifactId><version>${nowhere}</version></dependency>
  </dependencies></dependencyManagement>
</project>"""

MODULE = b"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <parent><groupId>org.example</groupId><artifactId>broker-parent</artifactId><version>2.1.0-SNAPSHOT</version></parent>
  <artifactId>broker-server</artifactId>
  <dependencies>
    <dependency><groupId>org.example</groupId><artifactId>broker-commons</artifactId><version>${project.version}</version></dependency>
    <dependency><groupId>io.netty</groupId><artifactId>netty-buffer</artifactId></dependency>
    <dependency><groupId>io.netty</groupId><artifactId>netty-transport-native-epoll</artifactId>
      <classifier>${native.classifier}</classifier></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId></dependency>
    <dependency><groupId>org.osgi</groupId><artifactId>osgi.cmpn</artifactId></dependency>
    <dependency><groupId>com.google.code.findbugs</groupId><artifactId>jsr305</artifactId><scope>provided</scope></dependency>
    <dependency><groupId>org.example</groupId><artifactId>new-thing</artifactId></dependency>
    <dependency><groupId>org.example</groupId><artifactId>mystery</artifactId></dependency>
    <dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13</version><scope>test</scope></dependency>
  </dependencies>
  <build><resources><resource><directory>src/main/resources</directory><filtering>true</filtering></resource></resources></build>
</project>"""

RELEASE_LIB = [
    maven.LibJar("netty-buffer-4.1.111.Final.jar", "io.netty", "netty-buffer", "4.1.111.Final"),
    maven.LibJar("netty-resolver-4.1.111.Final.jar", "io.netty", "netty-resolver", "4.1.111.Final"),
    maven.LibJar("netty-transport-native-epoll-4.1.111.Final-linux-x86_64.jar", "io.netty",
                 "netty-transport-native-epoll", "4.1.111.Final", "linux-x86_64"),
    maven.LibJar("netty-tcnative-2.0.66.Final.jar", "io.netty", "netty-tcnative", "2.0.66.Final"),
    maven.LibJar("slf4j-api-2.0.16.jar", "org.slf4j", "slf4j-api", "2.0.16"),
    maven.LibJar("micrometer-core-1.12.2.jar", "", "micrometer-core", "1.12.2"),
    maven.LibJar("broker-server-2.0.0.jar", "org.example", "broker-server", "2.0.0"),
]


def test_a_plan_moves_changed_versions_with_their_family_adds_new_ones_and_compiles_against_provided_ones():
    parent, module = maven.parse_pom(PARENT), maven.parse_pom(MODULE)
    props, managed = maven.merge([parent])
    props = {**props, **module.properties}
    plan = maven.plan_dependencies(RELEASE_LIB, module.dependencies, props, managed)
    assert plan.swaps == {
        "netty-buffer-4.1.111.Final.jar": "io.netty:netty-buffer:4.1.115.Final",
        "netty-transport-native-epoll-4.1.111.Final-linux-x86_64.jar":
            "io.netty:netty-transport-native-epoll:4.1.115.Final:jar:linux-x86_64",
        # not declared, but released with netty-buffer at the same version: moves with it
        "netty-resolver-4.1.111.Final.jar": "io.netty:netty-resolver:4.1.115.Final",
    }
    assert plan.added == ["org.example:new-thing:1.0"]
    # provided in the module, or provided by the parent's management: javac needs them, the broker does not
    assert plan.compile_only == ["com.google.code.findbugs:jsr305:3.0.2", "org.osgi:osgi.cmpn:7.0.0"]
    assert plan.notes == ["org.example:mystery: ${nowhere}  not resolved"]
    assert "3 dependency jar(s) at the commit's versions (io.netty)" in plan.describe()
    # the reactor's own module (broker-commons) and test dependencies are never fetched
    assert not any("broker-commons" in c or "junit" in c for c in plan.coords)


def test_a_jar_without_metadata_moves_by_its_name_and_takes_the_declared_group():
    module = maven.parse_pom(b"""<project><artifactId>m</artifactId><dependencies>
        <dependency><groupId>io.micrometer</groupId><artifactId>micrometer-core</artifactId><version>1.14.2</version>
        </dependency></dependencies></project>""")
    lib = RELEASE_LIB + [maven.LibJar("micrometer-commons-1.12.2.jar", "", "micrometer-commons", "1.12.2")]
    plan = maven.plan_dependencies(lib, module.dependencies, {}, {})
    assert plan.swaps == {"micrometer-core-1.12.2.jar": "io.micrometer:micrometer-core:1.14.2",
                          "micrometer-commons-1.12.2.jar": "io.micrometer:micrometer-commons:1.14.2"}


def test_an_unchanged_version_moves_nothing():
    module = maven.parse_pom(b"""<project><artifactId>m</artifactId><dependencies>
        <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.16</version>
        </dependency></dependencies></project>""")
    plan = maven.plan_dependencies(RELEASE_LIB, module.dependencies, {}, {})
    assert (plan.swaps, plan.added, plan.compile_only, plan.describe()) == ({}, [], [], "")


def test_pom_reading_and_filtering():
    module = maven.parse_pom(MODULE)
    assert (module.artifact, module.group, module.version) == ("broker-server", "org.example", "2.1.0-SNAPSHOT")
    assert module.filtered == ["src/main/resources"]
    props, _ = maven.merge([maven.parse_pom(PARENT)])
    text = "version=${project.version}\nnetty=${netty.version}\nunknown=${not.a.property}\n"
    assert maven.filter_text(text, props) == "version=2.1.0-SNAPSHOT\nnetty=4.1.115.Final\nunknown=${not.a.property}\n"
    assert maven.expand("${a}-${b}", {"a": "${b}", "b": "1"}) == "1-1"
    assert maven.expand("${loop}", {"loop": "${loop}"}) is None
    with pytest.raises(ValueError):
        maven.parse_pom(b"<project><unclosed></project>")


def test_resolution_pom_names_each_artifact_alone():
    pom = maven.resolution_pom(["io.netty:netty-buffer:4.1.115.Final",
                                "io.netty:netty-transport-native-epoll:4.1.115.Final:jar:linux-x86_64"])
    assert pom.count("<exclusion><groupId>*</groupId>") == 2
    assert "<classifier>linux-x86_64</classifier>" in pom


def test_jar_identity(tmp_path):
    with_meta = tmp_path / "netty-buffer-4.1.111.Final.jar"
    with zipfile.ZipFile(with_meta, "w") as z:
        z.writestr("META-INF/maven/io.netty/netty-buffer/pom.properties",
                   "#generated\ngroupId=io.netty\nartifactId=netty-buffer\nversion=4.1.111.Final\n")
    assert maven.jar_identity(with_meta) == maven.LibJar(with_meta.name, "io.netty", "netty-buffer", "4.1.111.Final")
    native = tmp_path / "netty-transport-native-epoll-4.1.111.Final-linux-x86_64.jar"
    with zipfile.ZipFile(native, "w") as z:
        z.writestr("META-INF/maven/io.netty/netty-transport-native-epoll/pom.properties",
                   "groupId=io.netty\nartifactId=netty-transport-native-epoll\nversion=4.1.111.Final\n")
    assert maven.jar_identity(native).classifier == "linux-x86_64"
    bare = tmp_path / "guava-33.0.0-jre.jar"
    with zipfile.ZipFile(bare, "w") as z:
        z.writestr("x.class", b"")
    assert maven.jar_identity(bare) == maven.LibJar(bare.name, "", "guava", "33.0.0-jre")
    assert maven.jar_identity(tmp_path / "missing.jar") is None


@pytest.mark.parametrize("template, tag, version", [
    ("{version}", "2.35.0", "2.35.0"), ("activemq-{version}", "activemq-5.18.6", "5.18.6"),
    ("v{version}", "v1.2", "1.2"), ("v{version}", "v1.2-rc1", None), ("{version}", "pypi-release-0.10", None),
])
def test_release_tags(template, tag, version):
    glob, regex = tag_pattern(template)
    match = regex.match(tag)
    assert (match.group(1) if match else None) == version
    assert glob.endswith("[0-9]*") or "[0-9]*" in glob


def test_recipe_parsing(tmp_path):
    base = {"releases": {"tag": "{version}", "label": "x-{version}", "versions": ["1.0", "2.0"]},
            "build": {"kind": "commands", "commands": [["make", "-C", "{src}", "-j{jobs}"]]},
            "start": {"command": "{out}/broker {port}", "url": "amqp://127.0.0.1:{port}"}}
    recipe = parse_recipe(base, path=tmp_path / "x.toml")
    assert (recipe.name, recipe.version_of("x-2.0"), recipe.version_of("y-2.0"), recipe.start.profile) == \
        ("x", "2.0", None, "generic")
    for broken, message in [
        ({**base, "releases": {**base["releases"], "series": "artemis"}}, "either series .* or versions"),
        ({**base, "build": {"kind": "gradle"}}, r"build\.kind = 'gradle' is not one of"),
        ({**base, "build": {"kind": "commands", "commands": "make"}}, "must be a list of argv lists"),
        ({**base, "start": {"url": "amqp://x:{port}"}}, r"start\.command is missing"),
        ({**base, "build": {"kind": "java-overlay", "base": "artemis-{version}", "modules": ["m"]}},
         r"a java-overlay build has no \[start\]"),
        ({k: v for k, v in base.items() if k != "build"}, r"no \[build\] table"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_recipe(broken, path=tmp_path / "x.toml")


def test_the_cache_key_of_a_recipe_is_its_content_not_its_comments(tmp_path):
    text = ('[releases]\ntag = "{version}"\nlabel = "x-{version}"\nversions = ["1.0", "2.0"]\n'
            '[build]\nkind = "commands"\ncommands = [["make"]]\n'
            '[start]\ncommand = "{out}/broker {port}"\nurl = "amqp://127.0.0.1:{port}"\n')
    (tmp_path / "x.toml").write_text(text)
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "x.toml").write_text("# a comment\n" + text.replace("\n[build]", "  # another\n\n[build]"))
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "x.toml").write_text(text.replace('["make"]', '["make", "-j2"]'))
    digest = load_recipe(str(tmp_path / "x.toml")).digest
    assert load_recipe(str(tmp_path / "y" / "x.toml")).digest == digest     # builds kept across a comment edit
    assert load_recipe(str(tmp_path / "z" / "x.toml")).digest != digest     # a changed command builds anew


def test_java_overlay_home(tmp_path, monkeypatch):
    """The home a java-overlay build runs from: the release's entries linked, lib/ with the build's jar, the
    release's jars but the moved ones, and the moved ones' new versions."""
    from conformance.brokers.source import builders
    release = tmp_path / "release"
    (release / "lib").mkdir(parents=True)
    (release / "bin").mkdir()
    for name in ("netty-buffer-4.1.111.Final.jar", "server-1.0.jar"):
        (release / "lib" / name).write_bytes(b"")
    new_jar = tmp_path / "repo" / "netty-buffer-4.1.115.Final.jar"
    new_jar.parent.mkdir()
    new_jar.write_bytes(b"")
    classes = tmp_path / "classes" / "org" / "example"
    classes.mkdir(parents=True)
    (classes / "Server.class").write_bytes(b"\xca\xfe")
    home = tmp_path / "home"
    builders.lay_out_home(release, home, "lib", "000-build.jar", tmp_path / "classes",
                          swapped={"netty-buffer-4.1.111.Final.jar"}, new_jars=[new_jar])
    assert (home / "bin").resolve() == (release / "bin").resolve()
    assert sorted(p.name for p in (home / "lib").iterdir()) == ["000-build.jar", "netty-buffer-4.1.115.Final.jar",
                                                                 "server-1.0.jar"]
    with zipfile.ZipFile(home / "lib" / "000-build.jar") as z:
        assert "org/example/Server.class" in z.namelist()
