from django.apps import AppConfig


class ResearchSiteConfig(AppConfig):
    name = "research_site"
    verbose_name = "Research MCP"
