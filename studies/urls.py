from django.urls import path

from . import views

urlpatterns = [
    path("study/<str:token>/", views.session, name="study-session"),
    path("study/<str:token>/consent", views.consent, name="study-consent"),
    path("study/<str:token>/questionnaire", views.questionnaire, name="study-questionnaire"),
    path("study/<str:token>/intro", views.intro, name="study-intro"),
    path("study/<str:token>/submit", views.submit, name="study-submit"),
    path("study/<str:token>/draft", views.draft, name="study-draft"),
    path("study/<str:token>/attempt", views.attempt_new, name="study-attempt"),
    path("study/<str:token>/attempt/<int:number>", views.attempt_status, name="study-attempt-status"),
    path("study/<str:token>/attempt/<int:number>/image", views.attempt_image, name="study-attempt-image"),
    path("study/<str:token>/withdraw", views.withdraw, name="study-withdraw"),
    path("studies/", views.studies_staff, name="studies-staff"),
    path("studies/<slug:slug>/", views.study_staff, name="study-staff"),
    path("studies/<slug:slug>/<str:kind>.<str:fmt>", views.study_export, name="study-export"),
]
