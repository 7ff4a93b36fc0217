from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.contrib.auth.signals import user_logged_in, user_login_failed
        from django.db.models.signals import post_save

        from accounts.activity import record_failed_sign_in, record_sign_in
        from accounts.receivers import user_saved

        user_logged_in.connect(record_sign_in, dispatch_uid="accounts.activity.sign_in")
        user_login_failed.connect(record_failed_sign_in, dispatch_uid="accounts.activity.sign_in_failed")
        post_save.connect(user_saved, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts.spaces.personal")
