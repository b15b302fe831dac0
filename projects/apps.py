from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    # Not "Projects": the admin's breadcrumbs would read "Projects › Projects".
    verbose_name = "Research"

    def ready(self) -> None:
        from projects import permissions  # noqa: F401 - its signals forget cached roles
