from django.urls import path

from . import views

urlpatterns = [
    path("account/notifications/", views.notification_settings, name="notifications"),
    path("account/notifications/unsubscribe/<str:token>/", views.unsubscribe, name="notifications-unsubscribe"),
    path("account/notifications/address/<str:token>/", views.address_confirm, name="notifications-address"),
]
