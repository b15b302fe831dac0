from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    # Not "Projects": the admin's breadcrumbs would read "Projects › Projects".
    verbose_name = "Research"
